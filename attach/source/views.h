#ifndef CPROF_VIEWS_H
#define CPROF_VIEWS_H
/*
 * views — how a profile type reads the shim's segment: which bucket kind
 * it takes and what values a bucket gives. The kinds table names one view
 * per segment-based type; the segment source (shim.c) applies it. A new
 * shim-based type is a new view here (and its row in the kinds table).
 *
 * Invariants:
 *  - values() never trusts a bucket: absurd or NaN estimates become 0;
 *  - values() with a base gives the change since base (the same stack in
 *    an earlier copy of the segment), and says whether anything changed.
 */
#include <stddef.h>
#include <stdint.h>

#include "shim/segment.h"

struct shim_view {
	uint32_t bucket;            /* the SEG_KIND_* it reads */
	const char *window;         /* for the note: "<type> <window> during the next Ns" */
	int bytes_label;            /* label each sample with the average object size ("bytes") */
	int off_warning;            /* warn when the shim samples nothing (CPROF_SAMPLE_RATE=0) */
	/*
	 * The values of bucket b, minus base when base is not NULL, into v
	 * (as many as the type declares); raw: sample counts, not estimates.
	 * Returns whether any is nonzero.
	 */
	int (*values)(const struct seg_bucket *b, const struct seg_bucket *base, int raw,
		      int64_t *v);
	/* The profile's period, from the copied header (e.g. the sampling rate). */
	int64_t (*period)(const struct seg_header *h);
	/*
	 * Whether the target records this kind at all: 1; or 0 with a
	 * one-line reason in why (cap bytes) naming the setting to change.
	 * NULL: always.
	 */
	int (*enabled)(const struct seg_header *h, char *why, size_t cap);
};

extern const struct shim_view view_heap;    /* alloc/inuse objects and bytes */
extern const struct shim_view view_threads; /* threads created */
extern const struct shim_view view_block;   /* waits by the waiter's stack */
extern const struct shim_view view_mutex;   /* contention by the releasing holder's stack */

#endif
