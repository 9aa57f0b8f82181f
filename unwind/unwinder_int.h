#ifndef CPROF_UNWINDER_INT_H
#define CPROF_UNWINDER_INT_H
/*
 * unwinder_int — what unwinder.c (the walk) and access.c (libunwind's
 * accessors) share: the unwinder's state. Private to those two files.
 *
 * Invariants:
 *  - img is set for the whole of a walk and only then;
 *  - the ev_* fields describe the current step only (reset before each);
 *  - used[] and overran[] describe the last walk.
 */
#include <stddef.h>
#include <stdint.h>

#include <libunwind.h>

#include "unwind/unwinder.h"

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
	uint64_t *pcs2;                 /* scratch for recovery walks */
	uint8_t *sig2;
	size_t cap2;
};

/* The copied region of t holding the 8 bytes at addr, or -1 (access.c). */
int unwind_region_of(const struct thread_image *t, uint64_t addr);

/* The accessors handed to unw_create_addr_space() (access.c). */
extern unw_accessors_t unwind_accessors;

#endif
