#ifndef CPROF_SHIM_CONTEND_H
#define CPROF_SHIM_CONTEND_H
/*
 * contend — the pure arithmetic of the block and mutex profiles: which
 * wait or contended release is recorded, with what weight, and the
 * parsing of CPROF_BLOCK_RATE (a duration).
 *
 * Invariants:
 *  - nothing here allocates, locks, reads a clock or calls outside this
 *    module; it is safe inside any interposed function;
 *  - block sampling has Go's SetBlockProfileRate semantics for *which*
 *    events are kept (a wait of d ns at rate r: always when d >= r, else
 *    with probability d / r; rate 1 every event, rate 0 none), but each
 *    kept event carries its own weight, 1 / P(kept) = max(1, r / d), so
 *    the sums of weights and of d * weight are unbiased estimates of the
 *    number of waits and of the time waited (Go records weight 1 and so
 *    under-counts short waits);
 *  - mutex sampling keeps each contended release with probability 1 / N
 *    (N = CPROF_MUTEX_FRACTION; 1 every one, 0 none) and weight N, except
 *    that a release charged CONTEND_MUTEX_KEEP_NS or more is always kept,
 *    with weight 1: on a loaded machine a holder or a woken waiter kept
 *    off a CPU for tens of ms makes a few releases carry most of the
 *    waiting, and drawn 1 in N they made totals swing from 0.6 to 2.4
 *    times the truth. Both rules are unbiased; the second bounds the
 *    extra records by the waiting itself (at most one per 10 ms of it);
 *  - a wait of 0 ns counts as 1 ns (as Go does), so that it has a weight.
 */
#include <stdint.h>

#include "shim/sample.h"

/* The weight of a wait of d ns at block rate rate: 0 when not recorded. */
static inline double contend_block_weight(struct sample_rng *r, uint64_t d, uint64_t rate)
{
	if (rate == 0)
		return 0.0;
	if (d == 0)
		d = 1;
	if (d >= rate)
		return 1.0;
	/* Uniform in [0, rate): the modulo bias is below rate / 2^64. */
	if (sample_next_u64(r) % rate >= d)
		return 0.0;
	return (double)rate / (double)d;
}

#define CONTEND_MUTEX_KEEP_NS 10000000ull /* 10 ms */

/* Whether a contended release is drawn at fraction n (weight n when it is). */
static inline int contend_mutex_take(struct sample_rng *r, uint64_t n)
{
	if (n <= 1)
		return n == 1;
	return sample_next_u64(r) % n == 0;
}

/* The weight of a kept release at fraction n: 1 when kept for its size. */
static inline uint32_t contend_mutex_weight(int by_size, uint64_t n)
{
	return by_size || n <= 1 ? 1u : (uint32_t)n;
}

/*
 * Parses a duration in nanoseconds: decimal digits and an optional unit,
 * ns, us, ms or s (none: ns), blanks around allowed. Sets *out and
 * returns SAMPLE_PARSE_OK, or a SAMPLE_PARSE_* problem (garbage, an
 * unknown unit, a minus sign, more than max ns), leaving *out alone.
 */
int contend_parse_ns(const char *s, uint64_t max, uint64_t *out);

#endif
