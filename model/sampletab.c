/*
 * sampletab.c — merging samples: one array of the public struct (so the
 * accessors and the encoder read it without copying) plus a hash index
 * over it, which keeps an add O(1) amortized. It was the second job of
 * profile.c, which keeps the interning tables, the header fields and
 * validation. Labels are sorted into a canonical order on the way in,
 * which is what makes label order irrelevant to merging at the cost of a
 * 16-element insertion sort per add; a sample's variable-length parts are
 * one arena block, values first.
 */
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "model/sampletab.h"

struct sample_key {
	const struct sampletab *t;
	const uint64_t *ids;
	size_t nloc;
	const struct profile_label *labels;
	size_t nlabels;
};

static int sample_eq(const void *ctx, uint32_t entry)
{
	const struct sample_key *k = ctx;
	const struct profile_sample *s = &k->t->v[entry];

	return s->nlocations == k->nloc && s->nlabels == k->nlabels &&
	       (!k->nloc || memcmp(s->location_ids, k->ids, k->nloc * sizeof(*k->ids)) == 0) &&
	       (!k->nlabels ||
		memcmp(s->labels, k->labels, k->nlabels * sizeof(*k->labels)) == 0);
}

static int label_cmp(const struct profile_label *a, const struct profile_label *b)
{
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->str != b->str)
		return a->str < b->str ? -1 : 1;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if (a->num_unit != b->num_unit)
		return a->num_unit < b->num_unit ? -1 : 1;
	return 0;
}

/* Sort labels[0..n) into the canonical order (insertion sort: n <= 16). */
static void labels_sort(struct profile_label *labels, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct profile_label l = labels[i];
		size_t j;

		for (j = i; j > 0 && label_cmp(&labels[j - 1], &l) > 0; j--)
			labels[j] = labels[j - 1];
		labels[j] = l;
	}
}

static uint32_t sample_hash(const struct sample_key *k)
{
	uint64_t h = hash_u64(HASH_SEED, k->nloc);

	for (size_t i = 0; i < k->nloc; i++)
		h = hash_u64(h, k->ids[i]);
	h = hash_u64(h, k->nlabels);
	for (size_t i = 0; i < k->nlabels; i++) {
		h = hash_u64(h, (uint64_t)k->labels[i].key);
		h = hash_u64(h, (uint64_t)k->labels[i].str);
		h = hash_u64(h, (uint64_t)k->labels[i].num);
		h = hash_u64(h, (uint64_t)k->labels[i].num_unit);
	}
	return hash_finish(h);
}

/* Store a new sample for key k; 0 or -1. */
static int sample_store(struct sampletab *t, const struct sample_key *k, uint32_t hv,
			const int64_t *values, size_t nv)
{
	size_t size = (k->nloc + nv) * sizeof(uint64_t) + k->nlabels * sizeof(*k->labels);
	struct profile_sample *s;
	unsigned char *mem;

	s = array_grow(t->v, &t->cap, t->n + 1, sizeof(*s), PROFILE_MAX_SAMPLES);
	if (s)
		t->v = s;
	if (!s || !(mem = arena_alloc(t->data, size)) ||
	    hash_insert(&t->index, hv, (uint32_t)t->n) < 0)
		return -1;
	s += t->n++;
	s->values = memcpy(mem, values, nv * sizeof(*values));
	mem += nv * sizeof(*values);
	s->location_ids = k->nloc ? memcpy(mem, k->ids, k->nloc * sizeof(*k->ids)) : NULL;
	mem += k->nloc * sizeof(*k->ids);
	s->nlocations = k->nloc;
	s->labels = k->nlabels ? memcpy(mem, k->labels, k->nlabels * sizeof(*k->labels)) : NULL;
	s->nlabels = k->nlabels;
	return 0;
}

void sampletab_init(struct sampletab *t, struct arena *data)
{
	t->v = NULL;
	t->n = 0;
	t->cap = 0;
	hash_init(&t->index);
	t->data = data;
}

void sampletab_release(struct sampletab *t)
{
	free(t->v);
	hash_release(&t->index);
	sampletab_init(t, t->data);
}

int sampletab_add(struct sampletab *t, const uint64_t *ids, size_t nloc,
		  struct profile_label *labels, size_t nlabels, const int64_t *values,
		  size_t nvalues)
{
	struct sample_key k = { t, ids, nloc, labels, nlabels };
	uint32_t hv;
	int64_t found, *v;

	labels_sort(labels, nlabels);
	hv = sample_hash(&k);
	found = hash_find(&t->index, hv, sample_eq, &k);
	if (found < 0)
		return sample_store(t, &k, hv, values, nvalues);
	/* The values live in the arena, which is the profile's and writable;
	 * the public struct only shows them as const to readers. Addition
	 * wraps rather than overflowing into undefined behaviour. */
	v = (int64_t *)t->v[found].values;
	for (size_t i = 0; i < nvalues; i++)
		v[i] = (int64_t)((uint64_t)v[i] + (uint64_t)values[i]);
	return 0;
}
