#ifndef CPROF_HINTS_H
#define CPROF_HINTS_H
/*
 * hints — how far up its stack each thread needs copied, learnt from
 * unwinding its earlier samples. Copying a thread's stack is most of the
 * time it stands still, and most threads need a few KiB.
 *
 * A hint is an address, the end of the copy, not a length: a thread's
 * outermost frames (start_thread, clone3, _start) stay at the same
 * addresses for its whole life, so the copy [sp, end) holds them however
 * much deeper the stack is this time. A length learnt from earlier samples
 * (the old scheme) cut the stack short whenever a signal frame (~1-3 KiB
 * of saved state) or a deeper call suddenly moved sp down, and some
 * signal-handler stacks of every capture came out partial.
 *
 * Invariants:
 *  - written by the consumer (after unwinding), read by the tracer (before
 *    copying), without locks: each slot is one relaxed atomic, and a stale
 *    or colliding value only changes how much is copied, never safety;
 *  - a thread never seen gets the full cap, as does a thread whose sp is
 *    not within the cap below its hint (another stack: a signal stack, a
 *    reused tid) — the tracer then looks for an alternate signal stack, and
 *    on the one it remembered copies up to that stack's end instead; a
 *    walk that wanted bytes past its copy forgets the hint;
 *  - a walk that reached the thread's start sets the hint to where it
 *    ended; a walk that stopped early only raises it, with headroom, so
 *    a thread alternating between the two never cuts the complete one;
 *  - the bytes copied stay within [HINTS_MIN, cap];
 *  - a thread that runs a signal handler on an alternate stack (sigaltstack)
 *    has two stacks: the hint above is its own stack's end (the interrupted
 *    one), and the alternate stack's end and signal frame are remembered
 *    apart (alt_end, alt_frame), by the tracer from what the kernel wrote
 *    in the frame; those two slots are written and read by the tracer only.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HINTS_SLOTS 4096
#define HINTS_MIN 2048
#define HINTS_MARGIN 256 /* copied past the hinted end */

struct stack_hints {
	size_t cap;
	_Atomic uint64_t slot[HINTS_SLOTS];      /* end address; 0: unknown */
	_Atomic uint64_t alt_end[HINTS_SLOTS];   /* alternate stack's end; 0: none known */
	_Atomic uint64_t alt_frame[HINTS_SLOTS]; /* its outermost signal frame */
};

/* All unknown; cap is the most ever copied. */
void hints_init(struct stack_hints *h, size_t cap);

/*
 * Bytes to copy for tid, whose stack pointer is sp; *known says whether sp
 * is within the cap below the learnt end (else the cap is returned: a
 * thread never seen, or sp on another stack).
 */
size_t hints_get(struct stack_hints *h, pid_t tid, uint64_t sp, int *known);

/*
 * The alternate signal stack last found for tid: *end its end, *frame the
 * address of the signal frame at its top that the kernel wrote when the
 * handler was entered from the thread's own stack; both 0 when none.
 */
void hints_alt_get(struct stack_hints *h, pid_t tid, uint64_t *frame, uint64_t *end);

/* Remember tid's alternate stack (end and frame as above; 0, 0 forgets it). */
void hints_alt_set(struct stack_hints *h, pid_t tid, uint64_t frame, uint64_t end);

/*
 * tid's last walk read its copy (which started at sp) up to address end;
 * complete: it reached the thread's start; overran: it wanted more.
 */
void hints_note(struct stack_hints *h, pid_t tid, uint64_t sp, uint64_t end, int complete,
		int overran);

#endif
