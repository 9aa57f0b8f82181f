#ifndef CPROF_U64MAP_H
#define CPROF_U64MAP_H
/*
 * u64map — a hash map from 64-bit keys to 64-bit values (open addressing,
 * linear probing, Fibonacci hashing).
 *
 * Invariants:
 *  - at most limit entries; a put past it fails and changes nothing;
 *  - the table is at most half full, so every probe meets an empty slot;
 *  - no deletion: the maps it serves (address -> location, thread ->
 *    last stack) only grow during one capture.
 */
#include <stddef.h>
#include <stdint.h>

struct u64map_slot {
	uint64_t key, value;
	int used;
};

struct u64map {
	struct u64map_slot *slots;
	size_t nslots, count, limit;
};

/* Start an empty map that may hold at most limit entries. */
void u64map_init(struct u64map *m, size_t limit);

/* Free the slots; the map is empty and reusable with the same limit. */
void u64map_release(struct u64map *m);

/* The value for key in *value; 1 when found, 0 when not. */
int u64map_get(const struct u64map *m, uint64_t key, uint64_t *value);

/* Set key to value (adding or replacing). 0, or -1 when full or out of memory. */
int u64map_put(struct u64map *m, uint64_t key, uint64_t value);

#endif
