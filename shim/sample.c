/*
 * sample.c — the arithmetic of Poisson sampling over allocated bytes, kept
 * apart from the interposition code so that it can be unit-tested alone
 * (tests/unit/test_shim_sample.c links only this file). It runs on the
 * shim's rare path only: one logarithm per sample to draw the next
 * interval and one expm1 per sampled allocation or free for its weight
 * (~20 ns each); the common path is sample_take(), an inline
 * compare-and-subtract. Both functions are computed here rather than
 * taken from libm: loading libm into every process started under the
 * shim cost more than the rest of the shim's start-up together.
 */
#include "shim/sample.h"

#include <stddef.h>
#include <string.h>

#define SAMPLE_LN2 0.69314718055994530942

/*
 * ln(x) for a normal, positive, finite x: x = m * 2^e with m in
 * [sqrt(1/2), sqrt(2)), ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <=
 * 0.172, whose series to s^21 leaves an error below 1e-17.
 */
static double sample_log(double x)
{
	uint64_t u;
	double m, s, s2, t = 0;
	int e, k;

	memcpy(&u, &x, sizeof(u));
	e = (int)((u >> 52) & 0x7ff) - 1023;
	u = (u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
	memcpy(&m, &u, sizeof(m));
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	s = (m - 1) / (m + 1);
	s2 = s * s;
	for (k = 21; k >= 3; k -= 2)
		t = (t + 1.0 / k) * s2;
	return (double)e * SAMPLE_LN2 + 2 * s * (1 + t);
}

/*
 * e^x - 1 for x <= 0, accurate to a few ulp also for tiny |x|: a Taylor
 * series below 1/2 in magnitude; else e^x = 2^k e^r with |r| <= ln2/2;
 * -1 below -40, where e^x is under half an ulp of 1.
 */
static double sample_expm1(double x)
{
	double sum = 0, term = 1, r, p;
	uint64_t u;
	int k, i;

	if (!(x > -40))
		return -1.0;
	if (x > -0.5) {
		for (i = 1; i <= 20; i++) {
			term *= x / i;
			sum += term;
		}
		return sum;
	}
	k = (int)(x / SAMPLE_LN2 - 0.5);
	r = x - k * SAMPLE_LN2;
	for (i = 1; i <= 17; i++) {
		term *= r / i;
		sum += term;
	}
	u = (uint64_t)(k + 1023) << 52; /* 2^k, k >= -58: normal */
	memcpy(&p, &u, sizeof(p));
	return p * (1 + sum) - 1;
}
void sample_seed(struct sample_rng *r, uint64_t seed)
{
	r->s = seed;
	/* Mix once so that nearby seeds (thread addresses) diverge at once. */
	(void)sample_next_u64(r);
}

uint64_t sample_interval(struct sample_rng *r, uint64_t rate)
{
	double u, x;

	if (rate == 0)
		return UINT64_MAX;
	if (rate == 1)
		return 0;
	/* u uniform in (0, 1]: 53 random bits, never 0, so log(u) is finite. */
	u = (double)((sample_next_u64(r) >> 11) + 1) * 0x1p-53;
	x = -sample_log(u) * (double)rate;
	if (!(x < 0x1p62))
		x = 0x1p62;
	return (uint64_t)x + 1;
}

double sample_weight(uint64_t size, uint64_t rate)
{
	double p;

	if (rate <= 1 || size == 0)
		return 1.0;
	p = -sample_expm1(-(double)size / (double)rate); /* P(sampled) = 1 - e^(-s/r) */
	if (!(p > 0.0))
		return 1.0;
	return 1.0 / p;
}

int sample_parse_head(const char *s, uint64_t *v, int *over, const char **end)
{
	int digits = 0;

	*v = 0;
	*over = 0;
	if (s == NULL)
		return SAMPLE_PARSE_NOT_A_NUMBER;
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '-')
		return s[1] >= '0' && s[1] <= '9' ? SAMPLE_PARSE_NEGATIVE : SAMPLE_PARSE_NOT_A_NUMBER;
	if (*s == '+')
		s++;
	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		uint64_t d = (uint64_t)(*s - '0');

		if (*v > (UINT64_MAX - d) / 10)
			*over = 1; /* too large, not garbage: read on */
		else
			*v = *v * 10 + d;
	}
	*end = s;
	return digits ? SAMPLE_PARSE_OK : SAMPLE_PARSE_NOT_A_NUMBER;
}

int sample_parse_tail(const char *s, uint64_t v, int over, uint64_t mult, uint64_t max,
		      uint64_t *out)
{
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (*s != '\0')
		return SAMPLE_PARSE_NOT_A_NUMBER;
	if (over || v > max / mult)
		return SAMPLE_PARSE_TOO_LARGE;
	*out = v * mult;
	return SAMPLE_PARSE_OK;
}

int sample_parse_size(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v, mult = 1;
	int over, r;

	if ((r = sample_parse_head(s, &v, &over, &s)) != SAMPLE_PARSE_OK)
		return r;
	switch (*s) {
	case 'k': case 'K': mult = (uint64_t)1 << 10; s++; break;
	case 'm': case 'M': mult = (uint64_t)1 << 20; s++; break;
	case 'g': case 'G': mult = (uint64_t)1 << 30; s++; break;
	default: break;
	}
	if (mult > 1 && (*s == 'b' || *s == 'B'))
		s++;
	return sample_parse_tail(s, v, over, mult, max, out);
}
