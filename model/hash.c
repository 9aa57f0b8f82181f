/*
 * hash.c — the index behind every interning table of the profile. Linear
 * probing over a slot array kept at most half full: a lookup touches one or
 * two cache lines, and storing the 32-bit hash in the slot lets a probe skip
 * most non-matching entries without calling back into the caller's compare.
 * Growing rehashes from the stored hashes alone, so it never needs the keys;
 * its cost is O(n) per doubling, O(1) amortized per insert. A full table of
 * 2^22 entries takes 64 MiB of slots.
 */
#include <errno.h>
#include <stdlib.h>

#include "model/hash.h"

#define HASH_MIN_SLOTS 64
#define HASH_MAX_SLOTS ((size_t)1 << 31) /* entry numbers are 32-bit */

uint64_t hash_u64(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= FNV_PRIME;
	return h ^ (h >> 29);
}

uint32_t hash_finish(uint64_t h)
{
	/* The murmur3 finalizer: FNV's low bits alone cluster badly. */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (uint32_t)h;
}

void hash_init(struct hash *h)
{
	h->slots = NULL;
	h->nslots = 0;
	h->n = 0;
}

void hash_release(struct hash *h)
{
	free(h->slots);
	hash_init(h);
}

int64_t hash_find(const struct hash *h, uint32_t hv,
		  int (*eq)(const void *ctx, uint32_t entry), const void *ctx)
{
	size_t mask = h->nslots - 1;

	if (!h->nslots)
		return -1;
	for (size_t i = hv & mask;; i = (i + 1) & mask) {
		const struct hash_slot *s = &h->slots[i];

		if (!s->entry)
			return -1;
		if (s->hash == hv && eq(ctx, s->entry - 1))
			return s->entry - 1;
	}
}

static void hash_place(struct hash_slot *slots, size_t nslots, uint32_t hv, uint32_t entry1)
{
	size_t mask = nslots - 1, i = hv & mask;

	while (slots[i].entry)
		i = (i + 1) & mask;
	slots[i].hash = hv;
	slots[i].entry = entry1;
}

static int hash_grow(struct hash *h)
{
	size_t nslots = h->nslots ? h->nslots * 2 : HASH_MIN_SLOTS;
	struct hash_slot *slots;

	if (nslots > HASH_MAX_SLOTS) {
		errno = EFBIG;
		return -1;
	}
	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -1;
	for (size_t i = 0; i < h->nslots; i++)
		if (h->slots[i].entry)
			hash_place(slots, nslots, h->slots[i].hash, h->slots[i].entry);
	free(h->slots);
	h->slots = slots;
	h->nslots = nslots;
	return 0;
}

int hash_insert(struct hash *h, uint32_t hv, uint32_t entry)
{
	if (entry == UINT32_MAX) {
		errno = EFBIG;
		return -1;
	}
	if ((h->n + 1) * 2 > h->nslots && hash_grow(h) < 0)
		return -1;
	hash_place(h->slots, h->nslots, hv, entry + 1);
	h->n++;
	return 0;
}
