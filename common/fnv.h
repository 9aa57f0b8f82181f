#ifndef CPROF_FNV_H
#define CPROF_FNV_H
/*
 * fnv — the FNV-1a hash (64-bit), the one copy that the model's interning
 * index, the stack tree's name map and the flame graph's colours share.
 *
 * Invariants:
 *  - fnv_bytes() is FNV-1a exactly as published (xor a byte, then multiply
 *    by FNV_PRIME), so a value is the same on every run and every machine:
 *    the flame graph's colours are picked from it and must stay stable;
 *  - hashing a string in two pieces, feeding the first result back in as
 *    h, gives the same value as hashing it in one piece;
 *  - nothing is allocated and nothing can fail.
 */
#include <stddef.h>
#include <stdint.h>

#define FNV_OFFSET 0xcbf29ce484222325ull /* FNV-1a 64's offset basis: the start value */
#define FNV_PRIME 0x100000001b3ull       /* FNV-1a 64's prime */

/* FNV-1a over the n bytes at p, continuing from h (start with FNV_OFFSET). */
uint64_t fnv_bytes(uint64_t h, const void *p, size_t n);

#endif
