/*
 * profile.c — the in-memory profile: its header fields (sample types,
 * period, times, comments), the interning tables for mappings, functions
 * and locations, the checks every add passes, and read access for the
 * writers. Merging samples is a job of its own, model/sampletab.c; this
 * file validates a sample and interns its label strings before handing it
 * over. Every table is an array of the public struct (so the accessors
 * and the encoder read it without copying) plus a hash index over it,
 * which keeps an add O(1) amortized; the variable-length parts of entries
 * live in an arena so the arrays can be reallocated without fixing up
 * pointers.
 */
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "model/arena.h"
#include "model/hash.h"
#include "model/profile.h"
#include "model/sampletab.h"
#include "model/strtab.h"

/* Bytes of stacks, values, labels and lines: enough for millions of
 * distinct stacks, and a bound on what a runaway producer can take. */
#define PROFILE_MAX_DATA ((size_t)2 << 30)

struct profile {
	struct strtab strings;
	struct arena data;
	struct profile_value_type types[PROFILE_MAX_VALUES];
	size_t ntypes;
	struct profile_value_type period_type;
	int64_t period, time_nanos, duration_nanos, default_type;
	int64_t comments[PROFILE_MAX_COMMENTS];
	size_t ncomments;
	struct profile_mapping *mappings;
	size_t nmappings, mappings_cap;
	struct profile_function *functions;
	size_t nfunctions, functions_cap;
	struct hash function_index;
	struct profile_location *locations;
	size_t nlocations, locations_cap;
	struct hash location_index;
	int location_index_stale; /* lines changed since it was built: rebuild before use */
	struct sampletab samples;
	uint64_t dropped;
};

struct profile *profile_new(void)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (strtab_init(&p->strings) < 0) {
		free(p);
		return NULL;
	}
	arena_init(&p->data, PROFILE_MAX_DATA);
	hash_init(&p->function_index);
	hash_init(&p->location_index);
	sampletab_init(&p->samples, &p->data);
	return p;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	strtab_release(&p->strings);
	arena_release(&p->data);
	free(p->mappings);
	free(p->functions);
	hash_release(&p->function_index);
	free(p->locations);
	hash_release(&p->location_index);
	sampletab_release(&p->samples);
	free(p);
}

/* Count a failed add; returns -1 for the caller to pass on. */
static int profile_drop(struct profile *p)
{
	p->dropped++;
	return -1;
}

int64_t profile_intern_string(struct profile *p, const char *s)
{
	int64_t i = strtab_intern(&p->strings, s ? s : "");

	if (i < 0)
		profile_drop(p);
	return i;
}

int profile_add_sample_type(struct profile *p, const char *type, const char *unit)
{
	int64_t t, u;

	if (p->samples.n)
		return -1;
	if (p->ntypes >= PROFILE_MAX_VALUES)
		return profile_drop(p);
	t = profile_intern_string(p, type);
	u = profile_intern_string(p, unit);
	if (t < 0 || u < 0)
		return -1;
	p->types[p->ntypes].type = t;
	p->types[p->ntypes].unit = u;
	return (int)p->ntypes++;
}

int profile_set_period(struct profile *p, const char *type, const char *unit, int64_t period)
{
	int64_t t = profile_intern_string(p, type);
	int64_t u = profile_intern_string(p, unit);

	if (t < 0 || u < 0)
		return -1;
	p->period_type.type = t;
	p->period_type.unit = u;
	p->period = period;
	return 0;
}

void profile_set_time(struct profile *p, int64_t time_nanos, int64_t duration_nanos)
{
	p->time_nanos = time_nanos;
	p->duration_nanos = duration_nanos;
}

int profile_set_default_sample_type(struct profile *p, const char *type)
{
	int64_t t;

	if (!type || !*type) {
		p->default_type = 0;
		return 0;
	}
	t = strtab_find(&p->strings, type);
	for (size_t i = 0; t > 0 && i < p->ntypes; i++) {
		if (p->types[i].type == t) {
			p->default_type = t;
			return 0;
		}
	}
	return -1;
}

int profile_add_comment(struct profile *p, const char *text)
{
	int64_t s;

	if (p->ncomments >= PROFILE_MAX_COMMENTS)
		return profile_drop(p);
	s = profile_intern_string(p, text);
	if (s < 0)
		return -1;
	p->comments[p->ncomments++] = s;
	return 0;
}

uint64_t profile_add_mapping(struct profile *p, const struct profile_mapping_in *m)
{
	struct profile_mapping *pm;
	int64_t file, build;

	pm = array_grow(p->mappings, &p->mappings_cap, p->nmappings + 1, sizeof(*pm),
			PROFILE_MAX_MAPPINGS);
	if (!pm) {
		profile_drop(p);
		return 0;
	}
	p->mappings = pm;
	file = profile_intern_string(p, m->filename);
	build = profile_intern_string(p, m->build_id);
	if (file < 0 || build < 0)
		return 0;
	pm = &p->mappings[p->nmappings];
	pm->id = p->nmappings + 1;
	pm->start = m->start;
	pm->limit = m->limit;
	pm->offset = m->offset;
	pm->filename = file;
	pm->build_id = build;
	pm->has_functions = !!m->has_functions;
	pm->has_filenames = !!m->has_filenames;
	pm->has_line_numbers = !!m->has_line_numbers;
	pm->has_inline_frames = !!m->has_inline_frames;
	return ++p->nmappings;
}

int profile_mapping_set_flags(struct profile *p, uint64_t id, int has_functions,
			      int has_filenames, int has_line_numbers, int has_inline_frames)
{
	struct profile_mapping *m;

	if (id == 0 || id > p->nmappings)
		return -1;
	m = &p->mappings[id - 1];
	m->has_functions = !!has_functions;
	m->has_filenames = !!has_filenames;
	m->has_line_numbers = !!has_line_numbers;
	m->has_inline_frames = !!has_inline_frames;
	return 0;
}

struct function_key {
	const struct profile *p;
	struct profile_function f;
};

static int function_eq(const void *ctx, uint32_t entry)
{
	const struct function_key *k = ctx;
	const struct profile_function *f = &k->p->functions[entry];

	return f->name == k->f.name && f->system_name == k->f.system_name &&
	       f->filename == k->f.filename && f->start_line == k->f.start_line;
}

uint64_t profile_intern_function(struct profile *p, const char *name, const char *system_name,
				 const char *filename, int64_t start_line)
{
	struct function_key k = { .p = p };
	struct profile_function *f;
	uint64_t h = HASH_SEED;
	uint32_t hv;
	int64_t found;

	k.f.name = profile_intern_string(p, name);
	k.f.system_name = profile_intern_string(p, system_name);
	k.f.filename = profile_intern_string(p, filename);
	k.f.start_line = start_line;
	if (k.f.name < 0 || k.f.system_name < 0 || k.f.filename < 0)
		return 0;
	h = hash_u64(h, (uint64_t)k.f.name);
	h = hash_u64(h, (uint64_t)k.f.system_name);
	h = hash_u64(h, (uint64_t)k.f.filename);
	hv = hash_finish(hash_u64(h, (uint64_t)start_line));
	found = hash_find(&p->function_index, hv, function_eq, &k);
	if (found >= 0)
		return (uint64_t)found + 1;
	f = array_grow(p->functions, &p->functions_cap, p->nfunctions + 1, sizeof(*f),
		       PROFILE_MAX_FUNCTIONS);
	if (f)
		p->functions = f;
	if (!f || hash_insert(&p->function_index, hv, (uint32_t)p->nfunctions) < 0) {
		profile_drop(p);
		return 0;
	}
	k.f.id = p->nfunctions + 1;
	f[p->nfunctions] = k.f;
	return ++p->nfunctions;
}

struct location_key {
	const struct profile *p;
	uint64_t mapping_id, address;
	const struct profile_line *lines;
	size_t nlines;
};

static int location_eq(const void *ctx, uint32_t entry)
{
	const struct location_key *k = ctx;
	const struct profile_location *l = &k->p->locations[entry];

	return l->mapping_id == k->mapping_id && l->address == k->address &&
	       l->nlines == k->nlines &&
	       (!k->nlines || memcmp(l->lines, k->lines, k->nlines * sizeof(*k->lines)) == 0);
}

/* The index hash of a location's key. */
static uint32_t location_hash(uint64_t mapping_id, uint64_t address,
			      const struct profile_line *lines, size_t nlines)
{
	uint64_t h = HASH_SEED;

	h = hash_u64(h, mapping_id);
	h = hash_u64(h, address);
	for (size_t i = 0; i < nlines; i++) {
		h = hash_u64(h, lines[i].function_id);
		h = hash_u64(h, (uint64_t)lines[i].line);
	}
	return hash_finish(h);
}

/* Whether lines[0..nlines) may be stored: each names an existing function. */
static int lines_valid(const struct profile *p, const struct profile_line *lines, size_t nlines)
{
	if (nlines && !lines)
		return 0;
	for (size_t i = 0; i < nlines; i++)
		if (lines[i].function_id == 0 || lines[i].function_id > p->nfunctions)
			return 0;
	return 1;
}

/* Build the location index anew after lines changed. 0 or -1. */
static int location_reindex(struct profile *p)
{
	const struct profile_location *l;

	hash_release(&p->location_index);
	for (size_t i = 0; i < p->nlocations; i++) {
		l = &p->locations[i];
		if (hash_insert(&p->location_index,
				location_hash(l->mapping_id, l->address, l->lines, l->nlines),
				(uint32_t)i) < 0)
			return -1;
	}
	p->location_index_stale = 0;
	return 0;
}

uint64_t profile_intern_location(struct profile *p, uint64_t mapping_id, uint64_t address,
				 const struct profile_line *lines, size_t nlines)
{
	struct location_key k = { p, mapping_id, address, lines, nlines };
	struct profile_location *l;
	struct profile_line *copy = NULL;
	uint32_t hv;
	int64_t found;

	if (mapping_id > p->nmappings || (nlines && !lines))
		return 0;
	if (nlines > PROFILE_MAX_STACK) {
		profile_drop(p);
		return 0;
	}
	if (!lines_valid(p, lines, nlines))
		return 0;
	if (p->location_index_stale && location_reindex(p) < 0) {
		profile_drop(p);
		return 0;
	}
	hv = location_hash(mapping_id, address, lines, nlines);
	found = hash_find(&p->location_index, hv, location_eq, &k);
	if (found >= 0)
		return (uint64_t)found + 1;
	l = array_grow(p->locations, &p->locations_cap, p->nlocations + 1, sizeof(*l),
		       PROFILE_MAX_LOCATIONS);
	if (l)
		p->locations = l;
	if (!l || (nlines && !(copy = arena_alloc(&p->data, nlines * sizeof(*copy)))) ||
	    hash_insert(&p->location_index, hv, (uint32_t)p->nlocations) < 0) {
		profile_drop(p);
		return 0;
	}
	if (nlines)
		memcpy(copy, lines, nlines * sizeof(*copy));
	l += p->nlocations;
	l->id = p->nlocations + 1;
	l->mapping_id = mapping_id;
	l->address = address;
	l->lines = copy;
	l->nlines = nlines;
	l->symbol_offset = -1;
	return ++p->nlocations;
}

int profile_location_set_lines(struct profile *p, uint64_t id, const struct profile_line *lines,
			       size_t nlines)
{
	struct profile_line *copy = NULL;
	struct profile_location *l;

	if (id == 0 || id > p->nlocations || nlines > PROFILE_MAX_STACK ||
	    !lines_valid(p, lines, nlines))
		return -1;
	l = &p->locations[id - 1];
	if (nlines == l->nlines && (!nlines || !memcmp(l->lines, lines, nlines * sizeof(*lines))))
		return 0;
	if (nlines <= l->nlines) {
		copy = (struct profile_line *)l->lines; /* ours: from the arena */
	} else if (!(copy = arena_alloc(&p->data, nlines * sizeof(*copy)))) {
		return profile_drop(p);
	}
	if (nlines)
		memcpy(copy, lines, nlines * sizeof(*copy));
	l->lines = nlines ? copy : NULL;
	l->nlines = nlines;
	p->location_index_stale = 1;
	return 0;
}

int profile_location_set_offset(struct profile *p, uint64_t id, int64_t offset)
{
	if (id == 0 || id > p->nlocations)
		return -1;
	p->locations[id - 1].symbol_offset = offset;
	return 0;
}

/* Intern the labels' strings into out, in their given order; 0, or -1 if a string did not fit. */
static int labels_intern(struct profile *p, const struct profile_label_in *in, size_t n,
			 struct profile_label *out)
{
	for (size_t i = 0; i < n; i++) {
		struct profile_label l = { 0, 0, 0, 0 };

		l.key = profile_intern_string(p, in[i].key);
		if (l.key < 0)
			return -1;
		if (in[i].str) {
			l.str = profile_intern_string(p, in[i].str);
			if (l.str < 0)
				return -1;
		} else {
			l.num = in[i].num;
			l.num_unit = profile_intern_string(p, in[i].num_unit);
			if (l.num_unit < 0)
				return -1;
		}
		out[i] = l;
	}
	return 0;
}

int profile_add_sample(struct profile *p, const uint64_t *location_ids, size_t nloc,
		       const int64_t *values, const struct profile_label_in *labels,
		       size_t nlabels)
{
	struct profile_label canon[PROFILE_MAX_LABELS];

	if (!p->ntypes || !values || (nloc && !location_ids) || (nlabels && !labels))
		return -1;
	if (nloc > PROFILE_MAX_STACK || nlabels > PROFILE_MAX_LABELS)
		return profile_drop(p);
	for (size_t i = 0; i < nloc; i++)
		if (location_ids[i] == 0 || location_ids[i] > p->nlocations)
			return -1;
	for (size_t i = 0; i < nlabels; i++)
		if (!labels[i].key)
			return -1;
	if (labels_intern(p, labels, nlabels, canon) < 0)
		return -1;
	if (sampletab_add(&p->samples, location_ids, nloc, canon, nlabels, values, p->ntypes) < 0)
		return profile_drop(p);
	return 0;
}

size_t profile_nstrings(const struct profile *p)
{
	return p->strings.n;
}

int profile_own_label(const char *key)
{
	static const char *const own[PROFILE_OWN_LABELS] = { "thread", "tid",	  "state",
							     "syscall", "pid", "process",
							     "waker" };
	int i;

	for (i = 0; i < PROFILE_OWN_LABELS; i++)
		if (!strcmp(key, own[i]))
			return i;
	/* The waker's tid goes with its name. */
	if (!strcmp(key, "waker_tid"))
		return PROFILE_OWN_LABELS - 1;
	return -1;
}

const char *profile_string(const struct profile *p, int64_t index)
{
	if (index < 0 || (uint64_t)index >= p->strings.n)
		return "";
	return p->strings.strs[index];
}

void profile_scale_values(struct profile *p, size_t vi,
			  double (*factor)(void *ctx, const struct profile_sample *s), void *ctx)
{
	size_t i;
	int64_t *v;

	if (vi >= p->ntypes)
		return;
	for (i = 0; i < p->samples.n; i++) {
		/* The arena is ours and writable (see profile_add_sample). */
		v = (int64_t *)p->samples.v[i].values;
		v[vi] = (int64_t)((double)v[vi] * factor(ctx, &p->samples.v[i]) + 0.5);
	}
}

size_t profile_nvalues(const struct profile *p)
{
	return p->ntypes;
}

const struct profile_value_type *profile_sample_types(const struct profile *p)
{
	return p->types;
}

struct profile_value_type profile_period_type(const struct profile *p)
{
	return p->period_type;
}

int64_t profile_period(const struct profile *p)
{
	return p->period;
}

int64_t profile_time_nanos(const struct profile *p)
{
	return p->time_nanos;
}

int64_t profile_duration_nanos(const struct profile *p)
{
	return p->duration_nanos;
}

int64_t profile_default_sample_type(const struct profile *p)
{
	return p->default_type;
}

const int64_t *profile_comments(const struct profile *p, size_t *n)
{
	*n = p->ncomments;
	return p->comments;
}

const struct profile_mapping *profile_mappings(const struct profile *p, size_t *n)
{
	*n = p->nmappings;
	return p->mappings;
}

const struct profile_function *profile_functions(const struct profile *p, size_t *n)
{
	*n = p->nfunctions;
	return p->functions;
}

const struct profile_location *profile_locations(const struct profile *p, size_t *n)
{
	*n = p->nlocations;
	return p->locations;
}

const struct profile_sample *profile_samples(const struct profile *p, size_t *n)
{
	*n = p->samples.n;
	return p->samples.v;
}

const struct profile_mapping *profile_mapping(const struct profile *p, uint64_t id)
{
	return id && id <= p->nmappings ? &p->mappings[id - 1] : NULL;
}

const struct profile_function *profile_function(const struct profile *p, uint64_t id)
{
	return id && id <= p->nfunctions ? &p->functions[id - 1] : NULL;
}

const struct profile_location *profile_location(const struct profile *p, uint64_t id)
{
	return id && id <= p->nlocations ? &p->locations[id - 1] : NULL;
}

uint64_t profile_dropped(const struct profile *p)
{
	return p->dropped;
}
