#ifndef CPROF_HASH_H
#define CPROF_HASH_H
/*
 * hash — an open-addressing index for interning tables, private to model/.
 *
 * Invariants:
 *  - the index maps a 32-bit hash to entry numbers (0-based) of an array the
 *    caller owns; it never holds keys, so equality is the caller's callback;
 *  - the slot count is a power of two and at least twice the entry count, so
 *    a lookup probes a short run and always meets an empty slot;
 *  - an insert that cannot grow the index fails (-1) and leaves it as it was.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/fnv.h"

#define HASH_SEED FNV_OFFSET /* where a chain of hash_u64() (or fnv_bytes()) starts */

struct hash_slot {
	uint32_t hash;
	uint32_t entry; /* entry number + 1; 0 marks an empty slot */
};

struct hash {
	struct hash_slot *slots;
	size_t nslots; /* 0 or a power of two */
	size_t n;
};

/*
 * Fold one 64-bit word into h (FNV-1a's step on a whole word, then a shift
 * to bring high bits down); one multiply per word instead of eight. Bytes
 * are hashed with fnv_bytes() (common/fnv.h).
 */
uint64_t hash_u64(uint64_t h, uint64_t v);

/* Mix the bits of h and reduce it to the 32 bits the index stores. */
uint32_t hash_finish(uint64_t h);

/* Start an empty index (it allocates on the first insert). */
void hash_init(struct hash *h);

/* Free the slots; the index is empty again and reusable. */
void hash_release(struct hash *h);

/*
 * Find an entry with hash hv for which eq(ctx, entry) is true; returns the
 * entry number, or -1 when there is none.
 */
int64_t hash_find(const struct hash *h, uint32_t hv,
		  int (*eq)(const void *ctx, uint32_t entry), const void *ctx);

/* Add entry under hv (the caller checked it is absent). 0 or -1. */
int hash_insert(struct hash *h, uint32_t hv, uint32_t entry);

#endif
