/*
 * test_shim_contend.c — unit tests for shim/contend.[ch], the arithmetic
 * of the block and mutex profiles, linked alone. Statistical tests use
 * fixed seeds (deterministic) and tolerances of 4 standard deviations
 * computed from the sampling model, so a pass means "consistent with an
 * unbiased estimator", not "tuned until green": waits shorter than the
 * rate, longer, and mixed at one site give totals of waits and of time
 * waited within those bounds of the truth, at rates above and below the
 * waits' durations; Go's way (the same choice of events, weight 1)
 * under-counts the short waits by the factor it should; 1 in N mutex
 * sampling scaled by N is unbiased; the rate and fraction edge cases
 * (0 off, 1 everything) and the duration parser.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shim/contend.h"

/* The PRNG state set directly (sample_seed lives in sample.c, not linked here). */
static void rng_seed(struct sample_rng *r, uint64_t s)
{
	r->s = s * 0x9E3779B97F4A7C15ull;
}

/* Estimates of a stream of n waits of durations d[i % nd] at rate. */
struct est {
	double count, delay;      /* sums of weights and of d * weight */
	double var_count, var_delay; /* their variance under the model */
	double go_count, go_delay; /* Go's: the same events, weight 1 */
	double true_count, true_delay;
};

static void run(struct est *e, const uint64_t *d, size_t nd, long n, uint64_t rate, uint64_t seed)
{
	struct sample_rng r;
	long i;

	*e = (struct est){ 0 };
	rng_seed(&r, seed);
	for (i = 0; i < n; i++) {
		uint64_t di = d[(size_t)i % nd];
		double w = contend_block_weight(&r, di, rate);
		double p = di >= rate ? 1.0 : (double)di / (double)rate;

		e->true_count += 1;
		e->true_delay += (double)di;
		/* Var of w * X with X ~ Bernoulli(p), w = 1/p: (1 - p) / p. */
		e->var_count += (1 - p) / p;
		e->var_delay += (double)di * (double)di * (1 - p) / p;
		if (w > 0) {
			e->count += w;
			e->delay += (double)di * w;
			e->go_count += 1;
			e->go_delay += (double)di;
		}
	}
}

static void assert_within(double got, double want, double var)
{
	double tol = 4 * sqrt(var) + 1e-9 * want;

	if (fabs(got - want) > tol)
		fail_msg("estimate %.1f, truth %.1f, 4 sigma %.1f", got, want, tol);
}

/* Waits all shorter than the rate: sampled with probability d / rate, weighted rate / d. */
static void test_block_short_waits(void **state)
{
	static const uint64_t d[] = { 2000 }; /* 2 us at a 10 us rate: p = 0.2 */
	struct est e;

	(void)state;
	run(&e, d, 1, 400000, 10000, 1);
	assert_within(e.count, e.true_count, e.var_count);
	assert_within(e.delay, e.true_delay, e.var_delay);
	/* Go keeps the same events with weight 1: 20% of the truth. */
	assert_within(e.go_count, 0.2 * e.true_count, 0.2 * 0.8 * e.true_count);
}

/* Waits all at least the rate: every one, weight 1, exact. */
static void test_block_long_waits(void **state)
{
	static const uint64_t d[] = { 10000, 25000, 1000000 };
	struct est e;

	(void)state;
	run(&e, d, 3, 30000, 10000, 2);
	assert_true(e.count == e.true_count);
	assert_true(e.delay == e.true_delay);
	assert_true(e.go_delay == e.true_delay);
}

/*
 * One site mixing 1 us and 1 ms waits at rates below, between and above
 * them: unbiased at every rate, where Go's estimate of the number of waits
 * is off by the share of short ones it drops.
 */
static void test_block_mixed_rates(void **state)
{
	static const uint64_t d[] = { 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000000 };
	static const uint64_t rates[] = { 500, 100000, 5000000 };
	struct est e;
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
		run(&e, d, 10, 500000, rates[k], 3 + k);
		assert_within(e.count, e.true_count, e.var_count);
		assert_within(e.delay, e.true_delay, e.var_delay);
	}
	/* At 100 us, Go counts the 1 ms waits and 1% of the 1 us ones: ~11% of the waits. */
	run(&e, d, 10, 500000, 100000, 9);
	assert_true(e.go_count < 0.12 * e.true_count && e.go_count > 0.10 * e.true_count);
}

static void test_block_edges(void **state)
{
	struct sample_rng r;
	int i, kept = 0;

	(void)state;
	rng_seed(&r, 4);
	for (i = 0; i < 1000; i++) {
		assert_true(contend_block_weight(&r, 5, 0) == 0.0);          /* 0: off */
		assert_true(contend_block_weight(&r, 5, 1) == 1.0);          /* 1: every event */
		assert_true(contend_block_weight(&r, 0, 1) == 1.0);          /* even 0 ns */
		assert_true(contend_block_weight(&r, 100, 100) == 1.0);      /* d == rate: always */
		kept += contend_block_weight(&r, 0, 1000) > 0;               /* 0 ns counts as 1 */
	}
	assert_true(kept < 20);
	for (i = 0, kept = 0; i < 100000; i++) {
		double w = contend_block_weight(&r, 0, 1000);

		if (w > 0) {
			assert_true(w == 1000.0);
			kept++;
		}
	}
	assert_true(kept > 50 && kept < 160); /* p = 1/1000 */
}

/* 1 in N contended releases, each weighted N: unbiased, N = 1 all, 0 none. */
static void test_mutex_fraction(void **state)
{
	static const uint64_t fracs[] = { 2, 10, 100 };
	struct sample_rng r;
	size_t k;
	long i, n = 300000;

	(void)state;
	rng_seed(&r, 5);
	for (i = 0; i < 1000; i++) {
		assert_true(contend_mutex_take(&r, 1));
		assert_false(contend_mutex_take(&r, 0));
	}
	for (k = 0; k < sizeof(fracs) / sizeof(fracs[0]); k++) {
		double est = 0, truth = 0, var = 0, f = (double)fracs[k];

		for (i = 0; i < n; i++) {
			double delay = (double)(1000 + (i % 7) * 250000); /* varied delays */

			truth += delay;
			var += delay * delay * (f - 1);
			if (contend_mutex_take(&r, fracs[k]))
				est += delay * f;
		}
		assert_within(est, truth, var);
	}
}

/*
 * Releases charged CONTEND_MUTEX_KEEP_NS or more are kept with weight 1,
 * the rest drawn 1 in N with weight N: still unbiased on delays with a
 * heavy tail (one release in 500 charged 50 ms, a holder kept off a CPU),
 * whose variance is now that of the small ones alone.
 */
static void test_mutex_keep(void **state)
{
	struct sample_rng r;
	double est = 0, truth = 0, var = 0, f = 10;
	long i, n = 300000;

	(void)state;
	assert_int_equal(contend_mutex_weight(1, 10), 1);
	assert_int_equal(contend_mutex_weight(0, 10), 10);
	assert_int_equal(contend_mutex_weight(0, 1), 1);
	rng_seed(&r, 9);
	for (i = 0; i < n; i++) {
		uint64_t d = i % 500 == 0 ? 50000000ull : 20000 + (uint64_t)(i % 11) * 10000;
		int by_size = d >= CONTEND_MUTEX_KEEP_NS;

		truth += (double)d;
		if (!by_size)
			var += (double)d * (double)d * (f - 1);
		if (by_size || contend_mutex_take(&r, (uint64_t)f))
			est += (double)d * contend_mutex_weight(by_size, (uint64_t)f);
	}
	assert_within(est, truth, var);
}

static void test_parse_ns(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(contend_parse_ns("10000", 1ull << 40, &v), SAMPLE_PARSE_OK);
	assert_int_equal(v, 10000);
	assert_int_equal(contend_parse_ns(" 10us ", 1ull << 40, &v), SAMPLE_PARSE_OK);
	assert_int_equal(v, 10000);
	assert_int_equal(contend_parse_ns("250ns", 1ull << 40, &v), SAMPLE_PARSE_OK);
	assert_int_equal(v, 250);
	assert_int_equal(contend_parse_ns("3ms", 1ull << 40, &v), SAMPLE_PARSE_OK);
	assert_int_equal(v, 3000000);
	assert_int_equal(contend_parse_ns("2s", 1ull << 40, &v), SAMPLE_PARSE_OK);
	assert_int_equal(v, 2000000000);
	assert_int_equal(contend_parse_ns("0", 1ull << 40, &v), SAMPLE_PARSE_OK);
	assert_int_equal(v, 0);
	v = 7;
	assert_int_equal(contend_parse_ns("abc", 1ull << 40, &v), SAMPLE_PARSE_NOT_A_NUMBER);
	assert_int_equal(contend_parse_ns("10k", 1ull << 40, &v), SAMPLE_PARSE_NOT_A_NUMBER);
	assert_int_equal(contend_parse_ns("10 minutes", 1ull << 40, &v), SAMPLE_PARSE_NOT_A_NUMBER);
	assert_int_equal(contend_parse_ns("", 1ull << 40, &v), SAMPLE_PARSE_NOT_A_NUMBER);
	assert_int_equal(contend_parse_ns("-5us", 1ull << 40, &v), SAMPLE_PARSE_NEGATIVE);
	assert_int_equal(contend_parse_ns("2000s", 1000000000000ull, &v), SAMPLE_PARSE_TOO_LARGE);
	assert_int_equal(contend_parse_ns("99999999999999999999999", 1ull << 40, &v),
			 SAMPLE_PARSE_TOO_LARGE);
	assert_int_equal(v, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_short_waits),
		cmocka_unit_test(test_block_long_waits),
		cmocka_unit_test(test_block_mixed_rates),
		cmocka_unit_test(test_block_edges),
		cmocka_unit_test(test_mutex_fraction),
		cmocka_unit_test(test_mutex_keep),
		cmocka_unit_test(test_parse_ns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
