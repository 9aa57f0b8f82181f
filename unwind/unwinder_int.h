#ifndef CPROF_UNWINDER_INT_H
#define CPROF_UNWINDER_INT_H
/*
 * unwinder_int — what unwinder.c (the walk) and access.c (libunwind's
 * accessors) share: the unwinder's state. Private to those two files.
 *
 * Invariants:
 *  - img is set for the whole of a walk and only then;
 *  - the ev_* fields describe the current step only (reset before each),
 *    except ev_budget, which describes the whole stack;
 *  - used[] and overran[] describe the last walk;
 *  - every accessor call (memory, register, procedure info) is counted
 *    against the current step's budget and the current stack's (every walk
 *    of one unwinder_unwind(), repairs included); past either, every
 *    accessor fails at once and sets ev_budget, so no CFI program or DWARF
 *    expression, however it loops, runs longer than the budget allows (each
 *    of their bytes is fetched through access_mem, and each unw_step is
 *    counted against the stack's step budget).
 */
#include <stddef.h>
#include <stdint.h>

#include <libunwind.h>

#include "unwind/unwinder.h"

/*
 * Budgets: accessor calls per step (one frame's CFI lookup, program and
 * expressions, its cache cold) and per stack, and unw_step calls per stack
 * (the walks' depth limits bound those already; this is a backstop). The
 * frame's is far above what compilers' CFI needs; the stack's lets every
 * frame of the deepest stack kept parse its CFI cold, and keeps a hostile
 * stack's cost near that of such a stack. A walk that spends one ends
 * partial, UNWIND_CAUSE_BUDGET.
 */
#define UNWIND_FRAME_CALLS 8192u
#define UNWIND_STACK_CALLS (1u << 18)
#define UNWIND_STACK_STEPS 16384u

/* How far above sp a read is taken for a stack read past the copy. */
#define STACK_REACH (1u << 20)

struct unwinder {
	struct space *space;
	unw_addr_space_t as;
	const struct thread_image *img; /* the thread being unwound */
	size_t used[IMAGE_MAX_REGIONS]; /* bytes of each copied region the last walk read */
	int overran[IMAGE_MAX_REGIONS]; /* it wanted stack bytes past that region */
	/* What went wrong during the current step (reset before each). */
	int ev_noobj, ev_noinfo, ev_mem, ev_copy, ev_reg; /* ev_reg: register + 1 */
	int ev_budget;                  /* a budget was spent (stays set for the stack) */
	unsigned frame_calls;           /* accessor calls in the current step */
	unsigned stack_calls;           /* ... in the current stack */
	unsigned stack_steps;           /* unw_step calls in the current stack */
	uint64_t *pcs2;                 /* scratch for recovery walks */
	uint8_t *sig2;
	size_t cap2;
};

/*
 * Count one accessor call; 0, or -1 (ev_budget set) when the step's or the
 * stack's budget is spent (access.c).
 */
int unwind_spend(struct unwinder *u);

/* The copied region of t holding the 8 bytes at addr, or -1 (access.c). */
int unwind_region_of(const struct thread_image *t, uint64_t addr);

/* The accessors handed to unw_create_addr_space() (access.c). */
extern unw_accessors_t unwind_accessors;

#endif
