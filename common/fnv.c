/*
 * fnv.c — FNV-1a, kept in common/ so that model/ and writer/ use one copy
 * without either including the other's private headers. FNV is simple and
 * spreads short names well enough for hash maps; where its low bits are
 * used as a table index the caller mixes them further (model/hash.c's
 * hash_finish()).
 */
#include "common/fnv.h"

uint64_t fnv_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= FNV_PRIME;
	}
	return h;
}
