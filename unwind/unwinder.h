#ifndef CPROF_UNWINDER_H
#define CPROF_UNWINDER_H
/*
 * unwinder — from a copied thread state (registers and stack bytes) to a
 * call stack, with libunwind's remote API and DWARF CFI (.eh_frame), so
 * that code built without frame pointers unwinds.
 *
 * Invariants:
 *  - the unwinder never touches the live target: stack words come from the
 *    copied bytes, everything else from the objects' files (struct space);
 *    an address outside both ends the walk cleanly;
 *  - the walk is bounded by the caller's maximum depth and always ends;
 *  - pcs[0] is the exact interrupted instruction; every other frame is given
 *    as a call site (return address - 1), except a frame interrupted by a
 *    signal, whose address is exact;
 *  - not thread-safe: one thread uses an unwinder.
 */
#include <stddef.h>
#include <stdint.h>

struct space;

/* Registers in DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. */
#define DWARF_NREGS 17
#define DWARF_RBP 6
#define DWARF_RSP 7
#define DWARF_RIP 16

struct regs {
	uint64_t r[DWARF_NREGS];
	uint32_t valid; /* bit i set when r[i] is known */
};

/* A thread as it was copied: registers and the stack bytes above sp. */
struct thread_image {
	struct regs regs;
	uint64_t stack_addr;        /* address of stack[0], normally rsp */
	size_t stack_len;
	const unsigned char *stack;
};

/* Result flags. */
#define UNWIND_TRUNCATED 1u  /* stopped at the caller's depth limit */
#define UNWIND_PARTIAL 2u    /* stopped early: no unwind info or memory */

struct unwinder;

/* An unwinder reading objects from space. NULL on failure. */
struct unwinder *unwinder_new(struct space *space);

/* Release it; NULL is fine. */
void unwinder_free(struct unwinder *u);

/*
 * Unwind img into pcs[0..max), leaf first; returns the number of frames
 * (at least 1 when the image has an instruction pointer, else 0) and sets
 * *flags to UNWIND_* bits. When sig is not NULL, sig[i] is set to 1 when
 * frame i is a signal trampoline (the kernel's return path from a signal
 * handler, usually __restore_rt), else 0.
 */
size_t unwinder_unwind(struct unwinder *u, const struct thread_image *img, uint64_t *pcs,
		       uint8_t *sig, size_t max, unsigned *flags);

/*
 * How many bytes of the copied stack (from its start) the last walk read,
 * and in *overran whether it wanted bytes just past the copy — the copy
 * was too short. The tracer uses this to copy no more than a thread needs.
 */
size_t unwinder_stack_used(const struct unwinder *u, int *overran);

#endif
