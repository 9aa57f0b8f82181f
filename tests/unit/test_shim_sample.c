/*
 * test_shim_sample.c — unit tests for shim/sample.c, the arithmetic of the
 * allocation sampler, linked alone. Statistical tests use fixed seeds (so
 * they are deterministic) and tolerances of 4 standard deviations computed
 * from the sampling model itself, so a pass means "consistent with the
 * model", not "tuned until green": the mean interval between samples
 * matches the rate; the probability that an allocation of size s is
 * sampled is 1 - exp(-s/rate); on a call site mixing 16-byte and 64 KiB
 * allocations the weighted estimates of objects and bytes land within a
 * few percent of the truth while Go's average-size scaling is far off.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shim/sample.h"

/* The shim's slow-path decision (shim/malloc.c), minus guard and init. */
static int sim_sampled(uint64_t *left, struct sample_rng *r, uint64_t rate, uint64_t size)
{
	if (!sample_take(left, size))
		return 0;
	*left = sample_interval(r, rate);
	return 1;
}

static void test_interval_mean(void **state)
{
	static const uint64_t rates[] = { 4096, 65536, 524288, 1u << 30 };
	const int n = 400000;
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
		struct sample_rng r;
		double rate = (double)rates[k], sum = 0, sumsq = 0, over = 0, mean, var, p1;
		int i;

		sample_seed(&r, 42 + k);
		for (i = 0; i < n; i++) {
			double x = (double)sample_interval(&r, rates[k]);

			sum += x;
			sumsq += x * x;
			over += x > rate;
		}
		mean = sum / n;
		var = sumsq / n - mean * mean;
		/* floor(X) + 1 has mean rate + 1/2; the sd of the mean is rate / sqrt(n). */
		assert_true(fabs(mean - (rate + 0.5)) < 4 * rate / sqrt(n));
		/* Exponential: variance rate^2 (sd of the estimate ~ sqrt(8) rate^2 / sqrt(n)). */
		assert_true(fabs(var / (rate * rate) - 1) < 4 * sqrt(8.0 / n));
		/* Shape: P(X > rate) = 1/e. */
		p1 = exp(-1);
		assert_true(fabs(over / n - p1) < 4 * sqrt(p1 * (1 - p1) / n));
	}
}

static void test_probability_by_size(void **state)
{
	static const uint64_t sizes[] = { 1, 16, 1000, 65536, 524288, 4u << 20 };
	const uint64_t rate = 524288;
	const long n = 2000000;
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct sample_rng r;
		uint64_t left;
		double p = -expm1(-(double)sizes[k] / (double)rate), hits = 0;
		long i;

		sample_seed(&r, 7 + k);
		left = sample_interval(&r, rate);
		for (i = 0; i < n; i++)
			hits += sim_sampled(&left, &r, rate, sizes[k]);
		assert_true(fabs(hits / n - p) <= 4 * sqrt(p * (1 - p) / n) + 1e-12);
		/* And the weight is exactly the inverse of that probability. */
		assert_true(fabs(sample_weight(sizes[k], rate) * p - 1) < 1e-12);
	}
}

/*
 * 90% 16-byte and 10% 64 KiB allocations from one call site, rate 64 KiB:
 * per-sample weights estimate both totals without bias. Go scales a
 * bucket's totals by the weight of its average sampled size, which the
 * rarely sampled small blocks barely move: it misses most objects.
 */
static void test_mixed_sizes(void **state)
{
	const uint64_t rate = 65536, small = 16, big = 65536;
	const long n = 60000000;
	struct sample_rng r, pick;
	uint64_t left, samples = 0, sampled_bytes = 0, true_bytes = 0;
	double objects = 0, bytes = 0, var_obj = 0, var_bytes = 0, sd_obj, sd_bytes;
	double go_avg, go_scale, go_objects, go_bytes;
	long i;

	(void)state;
	sample_seed(&r, 2024);
	sample_seed(&pick, 99);
	left = sample_interval(&r, rate);
	for (i = 0; i < n; i++) {
		uint64_t s = sample_next_u64(&pick) % 10 == 0 ? big : small;

		true_bytes += s;
		if (sim_sampled(&left, &r, rate, s)) {
			double w = sample_weight(s, rate);

			samples++;
			sampled_bytes += s;
			objects += w;
			bytes += (double)s * w;
		}
	}
	/*
	 * Each allocation contributes w * Bernoulli(1/w): variance w - 1 to the
	 * objects estimate and s^2 (w - 1) to the bytes estimate.
	 */
	var_obj = 0.9 * n * (sample_weight(small, rate) - 1) + 0.1 * n * (sample_weight(big, rate) - 1);
	var_bytes = 0.9 * n * (double)(small * small) * (sample_weight(small, rate) - 1) +
		    0.1 * n * (double)big * (double)big * (sample_weight(big, rate) - 1);
	sd_obj = sqrt(var_obj) / n;
	sd_bytes = sqrt(var_bytes) / (double)true_bytes;
	/* The set-up makes 4 sd "a few percent"... */
	assert_true(4 * sd_obj < 0.04);
	assert_true(4 * sd_bytes < 0.01);
	/* ...and the estimates are within it. */
	assert_true(fabs(objects / n - 1) < 4 * sd_obj);
	assert_true(fabs(bytes / (double)true_bytes - 1) < 4 * sd_bytes);

	/* Go's runtime/pprof scaleHeapSample, for comparison: about 10x too few objects. */
	go_avg = (double)sampled_bytes / (double)samples;
	go_scale = 1 / (1 - exp(-go_avg / (double)rate));
	go_objects = (double)samples * go_scale;
	go_bytes = (double)sampled_bytes * go_scale;
	print_message("mixed 90%% 16 B / 10%% 64 KiB, rate 64 KiB, %ld allocations, %llu samples:\n"
		      "  weighted: objects %+.2f%% (4 sd %.2f%%), bytes %+.3f%% (4 sd %.3f%%)\n"
		      "  Go-style: objects %+.2f%%, bytes %+.3f%%\n",
		      n, (unsigned long long)samples, 100 * (objects / n - 1), 400 * sd_obj,
		      100 * (bytes / (double)true_bytes - 1), 400 * sd_bytes, 100 * (go_objects / n - 1),
		      100 * (go_bytes / (double)true_bytes - 1));
	/* Bytes are 99.8% big blocks here, so Go's bytes are close; its objects are not. */
	assert_true(go_objects / n < 0.5);
}

static void test_rate_one(void **state)
{
	struct sample_rng r;
	uint64_t left;
	int i;

	(void)state;
	sample_seed(&r, 1);
	assert_int_equal(sample_interval(&r, 1), 0);
	left = sample_interval(&r, 1);
	for (i = 0; i < 1000; i++)
		assert_true(sim_sampled(&left, &r, 1, (uint64_t)i % 3)); /* also size 0 */
	assert_true(sample_weight(1, 1) == 1.0);
	assert_true(sample_weight(12345, 1) == 1.0);
	assert_true(sample_weight(0, 1) == 1.0);
}

static void test_rate_zero(void **state)
{
	struct sample_rng r;
	uint64_t left;

	(void)state;
	sample_seed(&r, 1);
	left = sample_interval(&r, 0);
	assert_true(left == UINT64_MAX);
	assert_false(sim_sampled(&left, &r, 0, (uint64_t)1 << 40));
}

static void test_weights(void **state)
{
	const uint64_t rate = 524288;

	(void)state;
	/* Large blocks are (nearly) always sampled: weight ~1. */
	assert_true(fabs(sample_weight(rate * 40, rate) - 1) < 1e-15);
	assert_true(fabs(sample_weight(rate * 8, rate) - 1 / (1 - exp(-8.0))) < 1e-12);
	assert_true(sample_weight(UINT64_MAX, rate) == 1.0);
	/* Small blocks: w = rate/s + 1/2 + O(s/rate), computed without cancellation. */
	assert_true(fabs(sample_weight(1, rate) - (rate + 0.5)) < 1e-3);
	assert_true(fabs(sample_weight(16, rate) - (rate / 16.0 + 0.5)) < 1e-3);
	assert_true(sample_weight(0, rate) == 1.0);
	/* Monotone: bigger blocks, smaller weights. */
	assert_true(sample_weight(100, rate) > sample_weight(101, rate));
}

static void test_intervals_bounded(void **state)
{
	struct sample_rng r;
	int i;

	(void)state;
	sample_seed(&r, 0);
	for (i = 0; i < 100000; i++) {
		uint64_t v = sample_interval(&r, (uint64_t)1 << 40);

		assert_true(v >= 1 && v <= ((uint64_t)1 << 62) + 1);
	}
}

/*
 * The shim computes its own logarithm and expm1 (no libm in the target):
 * weights match libm's to a few ulp over sizes and rates, and intervals
 * keep their mean.
 */
static void test_own_math(void **state)
{
	struct sample_rng r;
	double worst = 0, sum = 0;
	uint64_t sz, rate;
	int i;

	(void)state;
	for (sz = 1; sz < ((uint64_t)1 << 40); sz = sz * 1.07 + 1) {
		for (rate = 2; rate < ((uint64_t)1 << 40); rate *= 3) {
			double want = 1 / (-expm1(-(double)sz / (double)rate));
			double e = fabs(sample_weight(sz, rate) / (want < 1 ? 1 : want) - 1);

			worst = e > worst ? e : worst;
		}
	}
	assert_true(worst < 1e-14);
	sample_seed(&r, 11);
	for (i = 0; i < 1000000; i++)
		sum += (double)sample_interval(&r, 1000000);
	assert_true(fabs(sum / i / 1e6 - 1) < 0.005); /* sd 0.001 */
}

/* parse(s, max): the value, or -(problem) when refused (*out untouched). */
static int64_t parse(const char *s, uint64_t max)
{
	uint64_t v = 777;
	int rc = sample_parse_size(s, max, &v);

	if (rc != SAMPLE_PARSE_OK) {
		assert_true(v == 777);
		return -rc;
	}
	return (int64_t)v;
}

static void test_parse(void **state)
{
	const int64_t nan = -SAMPLE_PARSE_NOT_A_NUMBER, neg = -SAMPLE_PARSE_NEGATIVE,
		      big = -SAMPLE_PARSE_TOO_LARGE;

	(void)state;
	/* Plain numbers, blanks around. */
	assert_true(parse("42", 100) == 42);
	assert_true(parse(" 42\n", 100) == 42);
	assert_true(parse("+42", 100) == 42);
	assert_true(parse("0", 100) == 0);
	assert_true(parse("1", 100) == 1);
	/* The suffixes users write: binary multiples, optional B. */
	assert_true(parse("64k", 1 << 30) == 65536);
	assert_true(parse("512K", 1 << 30) == 524288);
	assert_true(parse("1M", 1 << 30) == 1048576);
	assert_true(parse("1m", 1 << 30) == 1048576);
	assert_true(parse("2g", (uint64_t)1 << 40) == 2147483648);
	assert_true(parse("64KB", 1 << 30) == 65536);
	assert_true(parse("64kb ", 1 << 30) == 65536);
	/* Garbage. */
	assert_true(parse(NULL, 100) == nan);
	assert_true(parse("", 100) == nan);
	assert_true(parse("   ", 100) == nan);
	assert_true(parse("abc", 100) == nan);
	assert_true(parse("k", 100) == nan);
	assert_true(parse("12x", 100) == nan);
	assert_true(parse("0x10", 100) == nan);
	assert_true(parse("1.5M", 1 << 30) == nan);
	assert_true(parse("64 k", 1 << 30) == nan);
	assert_true(parse("64kk", 1 << 30) == nan);
	assert_true(parse("64t", (uint64_t)1 << 62) == nan);
	assert_true(parse("-", 100) == nan);
	/* Negative. */
	assert_true(parse("-1", 100) == neg);
	assert_true(parse(" -64k", 100) == neg);
	/* Too large, also past 2^64 and through a suffix. */
	assert_true(parse("101", 100) == big);
	assert_true(parse("1k", 1000) == big);
	assert_true(parse("1k", 1024) == 1024);
	{
		uint64_t v = 0;

		assert_int_equal(sample_parse_size("18446744073709551615", UINT64_MAX, &v), 0);
		assert_true(v == UINT64_MAX);
	}
	assert_true(parse("99999999999999999999999", UINT64_MAX) == big);
	assert_true(parse("17179869184G", UINT64_MAX) == big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval_mean),
		cmocka_unit_test(test_probability_by_size),
		cmocka_unit_test(test_mixed_sizes),
		cmocka_unit_test(test_rate_one),
		cmocka_unit_test(test_rate_zero),
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_own_math),
		cmocka_unit_test(test_intervals_bounded),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
