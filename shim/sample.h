#ifndef CPROF_SHIM_SAMPLE_H
#define CPROF_SHIM_SAMPLE_H
/*
 * sample — the pure arithmetic of allocation sampling: a per-thread PRNG,
 * exponentially distributed byte intervals between samples (a Poisson
 * process over allocated bytes), the unbiasing weight of a sampled
 * allocation, and the parsing of the numeric environment variables.
 *
 * Invariants:
 *  - nothing here allocates, locks, touches errno-visible state or calls
 *    anything outside this module (not even libm); it is safe inside
 *    malloc;
 *  - the sampling counter ("left") is the number of bytes that may still be
 *    allocated before the next sample point: an allocation of size s is
 *    sampled iff s >= left (sample_take). After a sample the interval is
 *    drawn afresh, so each allocation of size s is sampled independently
 *    with probability 1 - exp(-s / rate) (memorylessness of the
 *    exponential), and sample_weight(s, rate) is exactly 1 / that;
 *  - rate 0 means "never sample" (interval UINT64_MAX), rate 1 means
 *    "sample every allocation" (interval 0, weight 1), also size 0.
 */
#include <stdint.h>

#define SAMPLE_DEFAULT_RATE 524288u

/* splitmix64 state: one per thread, 8 bytes, no locks. */
struct sample_rng {
	uint64_t s;
};

/* Seeds r; any seed, including 0, gives a full-period sequence. */
void sample_seed(struct sample_rng *r, uint64_t seed);

/* The next 64 uniformly distributed bits (splitmix64: ~1 ns). */
static inline uint64_t sample_next_u64(struct sample_rng *r)
{
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/*
 * Bytes until the next sample point: floor(X) + 1 with X ~ Exp(mean rate),
 * capped at 2^62; UINT64_MAX for rate 0 and 0 for rate 1. Costs one logarithm.
 */
uint64_t sample_interval(struct sample_rng *r, uint64_t rate);

/*
 * The fast-path test shared by the shim and the tests: 0 and *left reduced
 * by size when an allocation of size bytes is not sampled; 1 (and *left
 * untouched) when it is, after which the caller must draw a new interval.
 */
static inline int sample_take(uint64_t *left, uint64_t size)
{
	if (__builtin_expect(size < *left, 1)) {
		*left -= size;
		return 0;
	}
	return 1;
}

/*
 * The inverse probability that an allocation of size bytes is sampled at
 * the given rate: 1 / (1 - exp(-size / rate)), via expm1 so that small
 * sizes keep their precision; 1 for rate <= 1 and for size 0.
 */
double sample_weight(uint64_t size, uint64_t rate);

/* sample_parse_size() results (the same numbers as segment.h's SEG_SETTING_*). */
#define SAMPLE_PARSE_OK 0
#define SAMPLE_PARSE_NOT_A_NUMBER 1
#define SAMPLE_PARSE_NEGATIVE 2
#define SAMPLE_PARSE_TOO_LARGE 3

/*
 * Parses s, a setting such as "524288", "64k", "512K", "1M", "2g":
 * decimal digits and an optional binary suffix (k/K 1024, m/M 2^20, g/G
 * 2^30, with or without a trailing b/B), blanks around allowed. Sets *out
 * and returns SAMPLE_PARSE_OK, or returns a SAMPLE_PARSE_* problem
 * (garbage, an unknown suffix, a minus sign, more than max) leaving *out
 * alone. No locale, no errno, no allocation.
 */
int sample_parse_size(const char *s, uint64_t max, uint64_t *out);

/*
 * The two halves every setting's parser shares (contend.c parses
 * durations with them). head: leading blanks, an optional '+', the
 * digits: SAMPLE_PARSE_OK with the value in *v, *over set when it
 * overflowed, *end just after the digits; else NOT_A_NUMBER or NEGATIVE.
 * tail: after the unit, only blanks may follow; then v * mult, which
 * must be at most max, into *out. Both return SAMPLE_PARSE_*.
 */
int sample_parse_head(const char *s, uint64_t *v, int *over, const char **end);
int sample_parse_tail(const char *s, uint64_t v, int over, uint64_t mult, uint64_t max,
		      uint64_t *out);

#endif
