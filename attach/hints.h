#ifndef CPROF_HINTS_H
#define CPROF_HINTS_H
/*
 * hints — how many stack bytes each thread needs copied, learnt from
 * unwinding its earlier samples. Copying a thread's stack is most of the
 * time it stands still (measured: 64 KiB costs ~45 us of a ~65 us pause
 * on a 2-CPU VM, 512 bytes ~2 us), and most threads need a few KiB.
 *
 * Invariants:
 *  - written by the consumer (after unwinding), read by the tracer (before
 *    copying), without locks: each slot is one relaxed atomic, and a stale
 *    or colliding value only changes how much is copied, never safety;
 *  - a thread never seen gets the full cap; a walk that wanted bytes past
 *    its copy sets its hint back to the cap at once; hints grow at once and
 *    shrink slowly, with headroom, so a slightly deeper stack next time
 *    still fits;
 *  - hints stay within [HINTS_MIN, cap].
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HINTS_SLOTS 4096
#define HINTS_MIN 2048

struct stack_hints {
	size_t cap;
	_Atomic uint32_t slot[HINTS_SLOTS]; /* 0: unknown */
};

/* All unknown; cap is the most ever copied. */
void hints_init(struct stack_hints *h, size_t cap);

/* Bytes to copy for tid. */
size_t hints_get(struct stack_hints *h, pid_t tid);

/* tid's last walk read used bytes of its copy; overran: it wanted more. */
void hints_note(struct stack_hints *h, pid_t tid, size_t used, int overran);

#endif
