#ifndef CPROF_SHIM_STACK_H
#define CPROF_SHIM_STACK_H
/*
 * stack — the call stack of a sampled allocation or a pthread_create call,
 * captured inside malloc with libgcc's _Unwind_Backtrace.
 *
 * Invariants:
 *  - capture takes no lock and allocates nothing: libgcc (gcc >= 12) finds
 *    each frame's unwind info through glibc's lock-free _dl_find_object
 *    (glibc >= 2.35) and imports neither dl_iterate_phdr nor malloc on
 *    that path; the one exception, frames registered at run time with
 *    __register_frame_info (JITs), takes libgcc's own mutex and may call
 *    malloc, which the caller's recursion guard sends to the real
 *    allocator;
 *  - frames are return addresses (_Unwind_GetIP), innermost first; frames
 *    whose address lies in the skip range (the shim itself) are dropped
 *    until the first one outside it, so frames[0] is in the shim's caller;
 *  - at most max frames: a deeper stack keeps the innermost max and gets
 *    SEG_BUCKET_TRUNCATED in *flags;
 *  - no dependency on other shim files.
 */
#include <stdint.h>

/*
 * Sets the address range [lo, hi) whose leading frames capture skips and
 * warms the unwinder up (its one-time initialisation, lazy symbol binding)
 * with one capture, so that the first capture inside malloc does nothing
 * for the first time.
 */
void stack_init(uintptr_t lo, uintptr_t hi);

/*
 * The address range of the object that contains addr (e.g. the shim's own
 * code), through _dl_find_object. 0, or -1 if unknown.
 */
int stack_object_range(const void *addr, uintptr_t *lo, uintptr_t *hi);

/*
 * Writes up to max (<= 64) return addresses of the calling thread's stack
 * to frames, sets *flags (0 or SEG_BUCKET_TRUNCATED); returns how many.
 * Costs roughly 100-300 ns a frame (a binary search of .eh_frame_hdr and
 * the interpretation of one CFI program).
 */
uint32_t stack_capture(uint64_t *frames, uint32_t max, uint32_t *flags);

#endif
