/*
 * sample.c — the arithmetic of Poisson sampling over allocated bytes, kept
 * apart from the interposition code so that it can be unit-tested alone
 * (tests/unit/test_shim_sample.c links only this file). It runs on the
 * shim's rare path only: one log() per sample to draw the next interval
 * (~20 ns) and one expm1() per sampled allocation or free for its weight;
 * the common path is sample_take(), an inline compare-and-subtract.
 */
#include "shim/sample.h"

#include <math.h>
#include <stddef.h>

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
	x = -log(u) * (double)rate;
	if (!(x < 0x1p62))
		x = 0x1p62;
	return (uint64_t)x + 1;
}

double sample_weight(uint64_t size, uint64_t rate)
{
	double p;

	if (rate <= 1 || size == 0)
		return 1.0;
	p = -expm1(-(double)size / (double)rate); /* P(sampled) = 1 - e^(-s/r) */
	if (!(p > 0.0))
		return 1.0;
	return 1.0 / p;
}

int sample_parse_size(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	int digits = 0, over = 0;

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

		if (v > (UINT64_MAX - d) / 10)
			over = 1; /* too large, not garbage: read on */
		else
			v = v * 10 + d;
	}
	if (digits == 0)
		return SAMPLE_PARSE_NOT_A_NUMBER;
	switch (*s) {
	case 'k': case 'K': mult = (uint64_t)1 << 10; s++; break;
	case 'm': case 'M': mult = (uint64_t)1 << 20; s++; break;
	case 'g': case 'G': mult = (uint64_t)1 << 30; s++; break;
	default: break;
	}
	if (mult > 1 && (*s == 'b' || *s == 'B'))
		s++;
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (*s != '\0')
		return SAMPLE_PARSE_NOT_A_NUMBER;
	if (over || v > max / mult)
		return SAMPLE_PARSE_TOO_LARGE;
	*out = v * mult;
	return SAMPLE_PARSE_OK;
}
