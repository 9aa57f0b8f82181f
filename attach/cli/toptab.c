/*
 * toptab.c — the tables of the live view (toptab.h). Names are interned
 * by their FNV-1a hash (a u64map from hash to name number, the name
 * compared on a hit: two names of one hash, never seen in practice, make
 * the second one dropped, not merged); entries by (tid << 32 | name
 * number). "Counted in total for this sample already" is a stamp per
 * entry, as writer/top.c does per function: O(frames) per sample.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/cli/toptab.h"
#include "common/err.h"
#include "common/fnv.h"
#include "common/u64map.h"
#include "model/profile.h"

struct entry {
	uint32_t tid, name;
	uint64_t stamp; /* the sample number + 1 that last added to total */
	int64_t self[TOPTAB_SPANS], total[TOPTAB_SPANS];
};

struct toptab {
	char **names;
	size_t nnames;
	struct u64map name_index; /* hash -> name number */
	struct entry *entries;
	size_t nentries;
	struct u64map entry_index; /* tid << 32 | name -> entry number */
	struct toptab_thread *threads;
	size_t nthreads;
	struct u64map thread_index; /* tid -> thread number */
	uint64_t stamp, dropped;
};

struct toptab *toptab_new(void)
{
	struct toptab *t = calloc(1, sizeof(*t));

	if (!t)
		goto err;
	t->names = calloc(TOPTAB_MAX_NAMES, sizeof(*t->names));
	t->entries = calloc(TOPTAB_MAX_ENTRIES, sizeof(*t->entries));
	t->threads = calloc(TOPTAB_MAX_THREADS, sizeof(*t->threads));
	if (!t->names || !t->entries || !t->threads)
		goto err;
	u64map_init(&t->name_index, TOPTAB_MAX_NAMES);
	u64map_init(&t->entry_index, TOPTAB_MAX_ENTRIES);
	u64map_init(&t->thread_index, TOPTAB_MAX_THREADS);
	return t;
err:
	if (t) {
		free(t->names);
		free(t->entries);
		free(t->threads);
		free(t);
	}
	error("top: out of memory for the function tables");
	return NULL;
}

void toptab_free(struct toptab *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	free(t->entries);
	free(t->threads);
	u64map_release(&t->name_index);
	u64map_release(&t->entry_index);
	u64map_release(&t->thread_index);
	free(t);
}

/* The number of name, interned; -1 when the table is full (or a hash is taken). */
static int64_t toptab_name(struct toptab *t, const char *name)
{
	uint64_t h = fnv_bytes(FNV_OFFSET, name, strlen(name)), v;

	if (u64map_get(&t->name_index, h, &v))
		return strcmp(t->names[v], name) ? -1 : (int64_t)v;
	if (t->nnames == TOPTAB_MAX_NAMES || !(t->names[t->nnames] = strdup(name)))
		return -1;
	if (u64map_put(&t->name_index, h, t->nnames) < 0) {
		free(t->names[t->nnames]);
		return -1;
	}
	return (int64_t)t->nnames++;
}

static struct entry *toptab_entry(struct toptab *t, uint32_t tid, const char *name)
{
	int64_t n = toptab_name(t, name);
	uint64_t key, v;

	if (n < 0)
		return NULL;
	key = (uint64_t)tid << 32 | (uint64_t)n;
	if (u64map_get(&t->entry_index, key, &v))
		return &t->entries[v];
	if (t->nentries == TOPTAB_MAX_ENTRIES || u64map_put(&t->entry_index, key, t->nentries) < 0)
		return NULL;
	t->entries[t->nentries].tid = tid;
	t->entries[t->nentries].name = (uint32_t)n;
	return &t->entries[t->nentries++];
}

static struct toptab_thread *toptab_thread(struct toptab *t, uint32_t tid, const char *name)
{
	struct toptab_thread *th;
	uint64_t v;

	if (u64map_get(&t->thread_index, tid, &v)) {
		th = &t->threads[v];
	} else {
		if (t->nthreads == TOPTAB_MAX_THREADS || u64map_put(&t->thread_index, tid, t->nthreads) < 0)
			return NULL;
		th = &t->threads[t->nthreads++];
		th->tid = (pid_t)tid;
	}
	if (name && *name)
		snprintf(th->name, sizeof(th->name), "%s", name);
	return th;
}

/* The sample's tid (0: none) and thread name (NULL: none), from its labels. */
static uint32_t sample_thread(const struct profile *p, const struct profile_sample *s,
			      const char **name)
{
	uint32_t tid = 0;
	size_t i;

	*name = NULL;
	for (i = 0; i < s->nlabels; i++) {
		const char *key = profile_string(p, s->labels[i].key);

		if (!strcmp(key, "tid") && s->labels[i].num > 0 && s->labels[i].num <= UINT32_MAX)
			tid = (uint32_t)s->labels[i].num;
		else if (!strcmp(key, "thread") && s->labels[i].str)
			*name = profile_string(p, s->labels[i].str);
	}
	return tid;
}

/* One frame (location line k, or the address) of one sample: self when leaf, total once. */
static void fold_frame(struct toptab *t, uint32_t tid, const char *name, int leaf, int64_t v)
{
	struct entry *e = toptab_entry(t, tid, name);
	int s;

	if (!e) {
		t->dropped++;
		return;
	}
	for (s = 0; s < TOPTAB_SPANS; s++) {
		if (leaf)
			e->self[s] += v;
		if (e->stamp != t->stamp)
			e->total[s] += v;
	}
	e->stamp = t->stamp;
}

int toptab_fold(struct toptab *t, const struct profile *p, size_t vi)
{
	const struct profile_sample *s;
	const struct profile_location *loc;
	const struct profile_function *fn;
	struct toptab_thread *th;
	const char *tname;
	char addr[32];
	size_t ns, i, j, k;
	uint32_t tid;

	for (i = 0; i < t->nentries; i++)
		t->entries[i].self[TOPTAB_INTERVAL] = t->entries[i].total[TOPTAB_INTERVAL] = 0;
	for (i = 0; i < t->nthreads; i++)
		t->threads[i].value[TOPTAB_INTERVAL] = 0;
	if (!p || vi >= profile_nvalues(p))
		return 0;
	s = profile_samples(p, &ns);
	for (i = 0; i < ns; i++) {
		int64_t v = s[i].values[vi];

		tid = sample_thread(p, &s[i], &tname);
		if ((th = toptab_thread(t, tid, tname))) {
			th->value[TOPTAB_INTERVAL] += v;
			th->value[TOPTAB_ALL] += v;
		}
		t->stamp++;
		for (j = 0; j < s[i].nlocations; j++) {
			if (!(loc = profile_location(p, s[i].location_ids[j])))
				continue;
			if (!loc->nlines) {
				snprintf(addr, sizeof(addr), "%#" PRIx64, loc->address);
				fold_frame(t, tid, addr, j == 0, v);
			}
			for (k = 0; k < loc->nlines; k++) {
				fn = profile_function(p, loc->lines[k].function_id);
				fold_frame(t, tid, fn ? profile_string(p, fn->name) : "?", j == 0 && k == 0,
					   v);
			}
		}
	}
	return 0;
}

struct fn_order {
	int span, by_total;
};

static int by_key(const void *a, const void *b, void *ctx)
{
	const struct toptab_fn *x = a, *y = b;
	const struct fn_order *k = ctx;
	int64_t x1 = k->by_total ? x->total[k->span] : x->self[k->span];
	int64_t y1 = k->by_total ? y->total[k->span] : y->self[k->span];
	int64_t x2 = k->by_total ? x->self[k->span] : x->total[k->span];
	int64_t y2 = k->by_total ? y->self[k->span] : y->total[k->span];

	if (x1 != y1)
		return x1 > y1 ? -1 : 1;
	if (x2 != y2)
		return x2 > y2 ? -1 : 1;
	return strcmp(x->name, y->name);
}

size_t toptab_functions(const struct toptab *t, int span, pid_t tid, int by_total,
			struct toptab_fn *out, size_t max, int64_t sum[TOPTAB_SPANS])
{
	struct fn_order k = { span, by_total };
	struct toptab_fn *all;
	size_t i, n = 0;
	int s;

	for (s = 0; s < TOPTAB_SPANS; s++) {
		sum[s] = 0;
		for (i = 0; i < t->nthreads; i++)
			if (!tid || t->threads[i].tid == tid)
				sum[s] += t->threads[i].value[s];
	}
	if (!(all = calloc(t->nnames ? t->nnames : 1, sizeof(*all))))
		return 0;
	for (i = 0; i < t->nentries; i++) {
		const struct entry *e = &t->entries[i];

		if (tid && e->tid != (uint32_t)tid)
			continue;
		for (s = 0; s < TOPTAB_SPANS; s++) {
			all[e->name].self[s] += e->self[s];
			all[e->name].total[s] += e->total[s];
		}
	}
	for (i = 0; i < t->nnames; i++) {
		if (!all[i].self[span] && !all[i].total[span])
			continue;
		all[n] = all[i];
		all[n++].name = t->names[i];
	}
	qsort_r(all, n, sizeof(*all), by_key, &k);
	if (n > max)
		n = max;
	memcpy(out, all, n * sizeof(*all));
	free(all);
	return n;
}

static int by_value(const void *a, const void *b, void *ctx)
{
	const struct toptab_thread *x = a, *y = b;
	int span = *(const int *)ctx;

	if (x->value[span] != y->value[span])
		return x->value[span] > y->value[span] ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

size_t toptab_threads(const struct toptab *t, int span, struct toptab_thread *out, size_t max)
{
	struct toptab_thread *all;
	size_t n = t->nthreads;

	if (!(all = malloc((n ? n : 1) * sizeof(*all))))
		return 0;
	memcpy(all, t->threads, n * sizeof(*all));
	qsort_r(all, n, sizeof(*all), by_value, &span);
	if (n > max)
		n = max;
	memcpy(out, all, n * sizeof(*all));
	free(all);
	return n;
}

int toptab_has_thread(const struct toptab *t, pid_t tid)
{
	uint64_t v;

	return tid > 0 && u64map_get(&t->thread_index, (uint64_t)tid, &v);
}

uint64_t toptab_dropped(const struct toptab *t)
{
	return t->dropped;
}
