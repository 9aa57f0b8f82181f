/*
 * u64map.c — open addressing with linear probing. The multiplicative hash
 * spreads sequential keys (addresses in one function, tids) across the
 * table; doubling keeps the load at most 1/2, so lookups stay a probe or
 * two on average.
 */
#include <stdlib.h>

#include "common/u64map.h"

static size_t slot_of(const struct u64map *m, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (m->nslots - 1);
}

void u64map_init(struct u64map *m, size_t limit)
{
	m->slots = NULL;
	m->nslots = m->count = 0;
	m->limit = limit;
}

void u64map_release(struct u64map *m)
{
	free(m->slots);
	u64map_init(m, m->limit);
}

int u64map_get(const struct u64map *m, uint64_t key, uint64_t *value)
{
	size_t i;

	if (!m->nslots)
		return 0;
	for (i = slot_of(m, key); m->slots[i].used; i = (i + 1) & (m->nslots - 1)) {
		if (m->slots[i].key == key) {
			*value = m->slots[i].value;
			return 1;
		}
	}
	return 0;
}

static void put_slot(struct u64map *m, uint64_t key, uint64_t value)
{
	size_t i;

	for (i = slot_of(m, key); m->slots[i].used && m->slots[i].key != key;
	     i = (i + 1) & (m->nslots - 1))
		;
	if (!m->slots[i].used)
		m->count++;
	m->slots[i].key = key;
	m->slots[i].value = value;
	m->slots[i].used = 1;
}

static int grow(struct u64map *m)
{
	struct u64map_slot *old = m->slots;
	size_t i, n = m->nslots;

	m->nslots = n ? n * 2 : 64;
	m->slots = calloc(m->nslots, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		m->nslots = n;
		return -1;
	}
	m->count = 0;
	for (i = 0; i < n; i++)
		if (old[i].used)
			put_slot(m, old[i].key, old[i].value);
	free(old);
	return 0;
}

int u64map_put(struct u64map *m, uint64_t key, uint64_t value)
{
	uint64_t v;

	if (!u64map_get(m, key, &v)) {
		if (m->count >= m->limit)
			return -1;
		if ((m->count + 1) * 2 > m->nslots && grow(m) < 0)
			return -1;
	}
	put_slot(m, key, value);
	return 0;
}
