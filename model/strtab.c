/*
 * strtab.c — string interning for the profile. Strings are copied into an
 * arena so that the pointer array is the only thing that moves, and it can
 * be given to protobuf-c as the encoded string_table without a copy. The
 * empty string is stored like any other at index 0 so that lookups need no
 * special case.
 */
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/fnv.h"
#include "model/profile.h"
#include "model/strtab.h"

struct strtab_key {
	const struct strtab *t;
	const char *s;
};

static uint32_t strtab_hash(const char *s, size_t len)
{
	return hash_finish(fnv_bytes(FNV_OFFSET, s, len));
}

static int strtab_eq(const void *ctx, uint32_t entry)
{
	const struct strtab_key *k = ctx;

	return strcmp(k->t->strs[entry], k->s) == 0;
}

int strtab_init(struct strtab *t)
{
	t->strs = NULL;
	t->n = 0;
	t->cap = 0;
	hash_init(&t->index);
	arena_init(&t->bytes, STRTAB_MAX_BYTES);
	if (strtab_intern(t, "") != 0) {
		strtab_release(t);
		return -1;
	}
	return 0;
}

void strtab_release(struct strtab *t)
{
	free(t->strs);
	t->strs = NULL;
	t->n = 0;
	t->cap = 0;
	hash_release(&t->index);
	arena_release(&t->bytes);
}

int64_t strtab_find(const struct strtab *t, const char *s)
{
	struct strtab_key k = { t, s };

	return hash_find(&t->index, strtab_hash(s, strlen(s)), strtab_eq, &k);
}

int64_t strtab_intern(struct strtab *t, const char *s)
{
	struct strtab_key k = { t, s };
	size_t len = strlen(s);
	uint32_t hv = strtab_hash(s, len);
	int64_t found = hash_find(&t->index, hv, strtab_eq, &k);
	char *copy, **strs;

	if (found >= 0)
		return found;
	strs = array_grow(t->strs, &t->cap, t->n + 1, sizeof(*strs), PROFILE_MAX_STRINGS);
	if (!strs)
		return -1;
	t->strs = strs;
	copy = arena_alloc(&t->bytes, len + 1);
	if (!copy)
		return -1;
	/* The index is updated last: a failure here wastes len bytes of arena
	 * but leaves the table consistent. */
	if (hash_insert(&t->index, hv, (uint32_t)t->n) < 0)
		return -1;
	memcpy(copy, s, len + 1);
	t->strs[t->n] = copy;
	return (int64_t)t->n++;
}
