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
	uint64_t v, mult = 1;
	int over, r;

	if ((r = sample_parse_head(s, &v, &over, &s)) != SAMPLE_PARSE_OK)
		return r;
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
	return sample_parse_tail(s, v, over, mult, max, out);
}
