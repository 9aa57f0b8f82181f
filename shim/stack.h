#ifndef CPROF_SHIM_STACK_H
#define CPROF_SHIM_STACK_H
/*
 * stack — the call stack of a sampled allocation or a pthread_create call,
 * captured inside malloc with libgcc's _Unwind_Backtrace.
 *
 * Invariants:
 *  - capture takes no lock and allocates nothing: the shim's own walk
 *    and its fallback, libgcc's unwinder (gcc >= 12; the process's
 *    libgcc_s.so if loaded, else a private static copy), both find each frame's unwind
 *    info through glibc's lock-free _dl_find_object (glibc >= 2.35);
 *    libgcc imports neither dl_iterate_phdr nor malloc on that path. The
 *    one exception, frames registered at run time with
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
#include <unwind.h>

#include "shim/segment.h"

/*
 * The libgcc unwinder of the fallback, a matching pair: the process's
 * libgcc_s.so once stack_pick_unwinder found one loaded (it knows the
 * frames JITs register with __register_frame_info), else the copy linked
 * privately into the shim. Swapped as one pointer, so that a capture never
 * mixes one library's context with the other's accessor.
 */
struct stack_unwinder {
	_Unwind_Reason_Code (*backtrace)(_Unwind_Trace_Fn, void *);
	_Unwind_Ptr (*getip)(struct _Unwind_Context *);
};
extern const struct stack_unwinder *stack_unwinder __attribute__((visibility("hidden")));

/* The state of one capture (used by the inline stack_capture below). */
struct stack_walk {
	uint64_t *frames;
	uint32_t n, max, flags;
	int started; /* 1 once a frame outside the skip range was seen */
	const struct stack_unwinder *u;
};

/*
 * The shim's own walk (stack.c): like stack_capture, or UINT32_MAX when
 * some frame's unwind information is beyond what it models, in which case
 * stack_capture falls back to libgcc. Never locks or allocates.
 */
uint32_t stack_capture_fast(uint64_t *frames, uint32_t max, uint32_t *flags)
	__attribute__((visibility("hidden")));

/* The per-frame callback of the libgcc fallback (stack.c). */
_Unwind_Reason_Code stack_step(struct _Unwind_Context *ctx, void *arg)
	__attribute__((visibility("hidden")));

/*
 * Sets the address range [lo, hi) whose leading frames capture skips,
 * picks the fallback unwinder (dlsym: call it outside any lock) and
 * warms the unwinder up (its one-time initialisation, lazy symbol binding)
 * with one capture, so that the first capture inside malloc does nothing
 * for the first time.
 */
void stack_init(uintptr_t lo, uintptr_t hi);

/*
 * stack_init's two halves: the skip range and the warm-up capture (no
 * lock: callable while the caller holds any lock), and the choice of the
 * fallback unwinder (two dlsym calls: the loader's lock).
 */
void stack_init_range(uintptr_t lo, uintptr_t hi);
void stack_pick_unwinder(void);

/*
 * The address range of the object that contains addr (e.g. the shim's own
 * code), through _dl_find_object. 0, or -1 if unknown.
 */
int stack_object_range(const void *addr, uintptr_t *lo, uintptr_t *hi);

/*
 * Writes up to max (<= 64) return addresses of the calling thread's stack
 * to frames, sets *flags (0 or SEG_BUCKET_TRUNCATED); returns how many.
 * Costs roughly 200-400 ns a frame (a binary search of .eh_frame_hdr and
 * the interpretation of one CFI program). Always inlined, so that it adds
 * no frame of its own for the unwinder to walk and skip.
 */
static inline __attribute__((always_inline)) uint32_t stack_capture(uint64_t *frames, uint32_t max,
								    uint32_t *flags)
{
	struct stack_walk w = { frames, 0, max > SEG_MAX_FRAMES ? SEG_MAX_FRAMES : max, 0, 0,
				__atomic_load_n(&stack_unwinder, __ATOMIC_ACQUIRE) };
	uint32_t n = stack_capture_fast(frames, max, flags);

	if (n != UINT32_MAX)
		return n;
	/* A failed step (code without unwind info) keeps the frames found so far. */
	(void)w.u->backtrace(stack_step, &w);
	*flags = w.flags;
	return w.n;
}

#endif
