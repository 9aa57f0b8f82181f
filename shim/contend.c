/*
 * contend.c — the parsing half of the block and mutex sampling arithmetic
 * (the sampling decisions themselves are inline in contend.h, since they
 * run on every contended wait): CPROF_BLOCK_RATE as a duration. Kept apart
 * from the interposition code so that tests/unit/test_shim_contend.c can
 * test the maths alone. No locale, no errno, no allocation: it runs in the
 * shim's constructor, before the program's own.
 */
#include "shim/contend.h"

#include <stddef.h>

int contend_parse_ns(const char *s, uint64_t max, uint64_t *out)
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
	while (*s == ' ')
		s++;
	if (s[0] == 'n' && s[1] == 's') {
		s += 2;
	} else if (s[0] == 'u' && s[1] == 's') {
		mult = 1000;
		s += 2;
	} else if (s[0] == 'm' && s[1] == 's') {
		mult = 1000000;
		s += 2;
	} else if (s[0] == 's') {
		mult = 1000000000;
		s += 1;
	}
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (*s != '\0')
		return SAMPLE_PARSE_NOT_A_NUMBER;
	if (over || v > max / mult)
		return SAMPLE_PARSE_TOO_LARGE;
	*out = v * mult;
	return SAMPLE_PARSE_OK;
}
