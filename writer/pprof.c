/*
 * pprof.c — the profile to and from pprof's wire format. Encoding builds
 * the protobuf-c message as a view of the model: repeated scalars (stacks,
 * values, comments) point straight into the profile's arrays, and only the
 * per-entry message structs, which protobuf-c needs as arrays of pointers,
 * are allocated — one block per kind, freed on the single exit path. The
 * packed message is held whole before compression, so writing costs about
 * the encoded size in memory on top of the profile. Decoding is for tests
 * and tools; it treats the input as untrusted and rebuilds the profile
 * through the public add functions, so every invariant of the model is
 * checked again and ids are renumbered densely.
 */
#include <stdlib.h>
#include <string.h>

#include "model/profile.h"
#include "proto/profile.pb-c.h"
#include "writer/gzip.h"
#include "writer/pprof.h"

#define PPROF_MAX_DECODED ((size_t)1 << 30) /* bound on a gzip bomb */


/* Everything pprof_write allocates, so that one call frees it all. */
struct pprof_enc {
	char **strings;
	Perftools__Profiles__Sample *samples;
	Perftools__Profiles__Sample **sample_ptrs;
	Perftools__Profiles__Label *labels;
	Perftools__Profiles__Label **label_ptrs;
	Perftools__Profiles__Mapping *mappings;
	Perftools__Profiles__Mapping **mapping_ptrs;
	Perftools__Profiles__Location *locations;
	Perftools__Profiles__Location **location_ptrs;
	Perftools__Profiles__Line *lines;
	Perftools__Profiles__Line **line_ptrs;
	Perftools__Profiles__Function *functions;
	Perftools__Profiles__Function **function_ptrs;
	unsigned char *packed;
};

/* Free every array e holds (e itself lives on the caller's stack). */
static void pprof_enc_release(struct pprof_enc *e)
{
	free(e->strings);
	free(e->samples);
	free(e->sample_ptrs);
	free(e->labels);
	free(e->label_ptrs);
	free(e->mappings);
	free(e->mapping_ptrs);
	free(e->locations);
	free(e->location_ptrs);
	free(e->lines);
	free(e->line_ptrs);
	free(e->functions);
	free(e->function_ptrs);
	free(e->packed);
}

/* calloc that also succeeds for n == 0, when protobuf-c ignores the array. */
static void *pprof_calloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int pprof_enc_samples(const struct profile *p, struct pprof_enc *e, Perftools__Profiles__Profile *m)
{
	const struct profile_sample *s;
	size_t n, nlabels = 0, at = 0;

	s = profile_samples(p, &n);
	for (size_t i = 0; i < n; i++)
		nlabels += s[i].nlabels;
	if (!(e->samples = pprof_calloc(n, sizeof(*e->samples))) ||
	    !(e->sample_ptrs = pprof_calloc(n, sizeof(*e->sample_ptrs))) ||
	    !(e->labels = pprof_calloc(nlabels, sizeof(*e->labels))) ||
	    !(e->label_ptrs = pprof_calloc(nlabels, sizeof(*e->label_ptrs))))
		return -1;
	for (size_t i = 0; i < n; i++) {
		Perftools__Profiles__Sample *ps = &e->samples[i];

		perftools__profiles__sample__init(ps);
		/* protobuf-c's fields are not const but packing only reads. */
		ps->n_location_id = s[i].nlocations;
		ps->location_id = (uint64_t *)s[i].location_ids;
		ps->n_value = profile_nvalues(p);
		ps->value = (int64_t *)s[i].values;
		ps->n_label = s[i].nlabels;
		ps->label = &e->label_ptrs[at];
		for (size_t j = 0; j < s[i].nlabels; j++, at++) {
			Perftools__Profiles__Label *l = &e->labels[at];

			perftools__profiles__label__init(l);
			l->key = s[i].labels[j].key;
			l->str = s[i].labels[j].str;
			l->num = s[i].labels[j].num;
			l->num_unit = s[i].labels[j].num_unit;
			e->label_ptrs[at] = l;
		}
		e->sample_ptrs[i] = ps;
	}
	m->n_sample = n;
	m->sample = e->sample_ptrs;
	return 0;
}

static int pprof_enc_mappings(const struct profile *p, struct pprof_enc *e, Perftools__Profiles__Profile *m)
{
	size_t n;
	const struct profile_mapping *pm = profile_mappings(p, &n);

	if (!(e->mappings = pprof_calloc(n, sizeof(*e->mappings))) ||
	    !(e->mapping_ptrs = pprof_calloc(n, sizeof(*e->mapping_ptrs))))
		return -1;
	for (size_t i = 0; i < n; i++) {
		Perftools__Profiles__Mapping *pb = &e->mappings[i];

		perftools__profiles__mapping__init(pb);
		pb->id = pm[i].id;
		pb->memory_start = pm[i].start;
		pb->memory_limit = pm[i].limit;
		pb->file_offset = pm[i].offset;
		pb->filename = pm[i].filename;
		pb->build_id = pm[i].build_id;
		pb->has_functions = pm[i].has_functions;
		pb->has_filenames = pm[i].has_filenames;
		pb->has_line_numbers = pm[i].has_line_numbers;
		pb->has_inline_frames = pm[i].has_inline_frames;
		e->mapping_ptrs[i] = pb;
	}
	m->n_mapping = n;
	m->mapping = e->mapping_ptrs;
	return 0;
}

static int pprof_enc_locations(const struct profile *p, struct pprof_enc *e, Perftools__Profiles__Profile *m)
{
	size_t n, nlines = 0, at = 0;
	const struct profile_location *l = profile_locations(p, &n);

	for (size_t i = 0; i < n; i++)
		nlines += l[i].nlines;
	if (!(e->locations = pprof_calloc(n, sizeof(*e->locations))) ||
	    !(e->location_ptrs = pprof_calloc(n, sizeof(*e->location_ptrs))) ||
	    !(e->lines = pprof_calloc(nlines, sizeof(*e->lines))) ||
	    !(e->line_ptrs = pprof_calloc(nlines, sizeof(*e->line_ptrs))))
		return -1;
	for (size_t i = 0; i < n; i++) {
		Perftools__Profiles__Location *pb = &e->locations[i];

		perftools__profiles__location__init(pb);
		pb->id = l[i].id;
		pb->mapping_id = l[i].mapping_id;
		pb->address = l[i].address;
		pb->n_line = l[i].nlines;
		pb->line = &e->line_ptrs[at];
		for (size_t j = 0; j < l[i].nlines; j++, at++) {
			Perftools__Profiles__Line *ln = &e->lines[at];

			perftools__profiles__line__init(ln);
			ln->function_id = l[i].lines[j].function_id;
			ln->line = l[i].lines[j].line;
			e->line_ptrs[at] = ln;
		}
		e->location_ptrs[i] = pb;
	}
	m->n_location = n;
	m->location = e->location_ptrs;
	return 0;
}

static int pprof_enc_functions(const struct profile *p, struct pprof_enc *e, Perftools__Profiles__Profile *m)
{
	size_t n;
	const struct profile_function *f = profile_functions(p, &n);

	if (!(e->functions = pprof_calloc(n, sizeof(*e->functions))) ||
	    !(e->function_ptrs = pprof_calloc(n, sizeof(*e->function_ptrs))))
		return -1;
	for (size_t i = 0; i < n; i++) {
		Perftools__Profiles__Function *pb = &e->functions[i];

		perftools__profiles__function__init(pb);
		pb->id = f[i].id;
		pb->name = f[i].name;
		pb->system_name = f[i].system_name;
		pb->filename = f[i].filename;
		pb->start_line = f[i].start_line;
		e->function_ptrs[i] = pb;
	}
	m->n_function = n;
	m->function = e->function_ptrs;
	return 0;
}

int pprof_write(const struct profile *p, struct buf *out)
{
	Perftools__Profiles__Profile m = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType types[PROFILE_MAX_VALUES], *type_ptrs[PROFILE_MAX_VALUES];
	Perftools__Profiles__ValueType period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	const struct profile_value_type *pt = profile_sample_types(p);
	struct profile_value_type per = profile_period_type(p);
	struct pprof_enc e;
	size_t n, size;

	memset(&e, 0, sizeof(e));
	/* The model keeps its strings in an array too, but does not show it;
	 * copying the pointers costs 8 bytes a string. */
	n = profile_nstrings(p);
	if (!(e.strings = pprof_calloc(n, sizeof(*e.strings))))
		goto err;
	for (size_t i = 0; i < n; i++)
		e.strings[i] = (char *)profile_string(p, (int64_t)i);
	m.n_string_table = n;
	m.string_table = e.strings;

	for (size_t i = 0; i < profile_nvalues(p); i++) {
		perftools__profiles__value_type__init(&types[i]);
		types[i].type = pt[i].type;
		types[i].unit = pt[i].unit;
		type_ptrs[i] = &types[i];
	}
	m.n_sample_type = profile_nvalues(p);
	m.sample_type = type_ptrs;
	if (per.type || per.unit) {
		period.type = per.type;
		period.unit = per.unit;
		m.period_type = &period;
	}
	m.period = profile_period(p);
	m.time_nanos = profile_time_nanos(p);
	m.duration_nanos = profile_duration_nanos(p);
	m.default_sample_type = profile_default_sample_type(p);
	m.comment = (int64_t *)profile_comments(p, &m.n_comment);

	if (pprof_enc_samples(p, &e, &m) < 0 || pprof_enc_mappings(p, &e, &m) < 0 ||
	    pprof_enc_locations(p, &e, &m) < 0 || pprof_enc_functions(p, &e, &m) < 0)
		goto err;

	size = protobuf_c_message_get_packed_size(&m.base);
	e.packed = malloc(size ? size : 1);
	if (!e.packed)
		goto err;
	if (protobuf_c_message_pack(&m.base, e.packed) != size)
		goto err;
	if (gzip_compress(e.packed, size, out) < 0)
		goto err;
	pprof_enc_release(&e);
	return 0;
err:
	pprof_enc_release(&e);
	return -1;
}

/* Old id -> new id, for the entries of a decoded message. */
struct pprof_id {
	uint64_t old, new;
};

struct pprof_idmap {
	struct pprof_id *v;
	size_t n;
};

static int pprof_id_cmp(const void *a, const void *b)
{
	const struct pprof_id *x = a, *y = b;

	return x->old < y->old ? -1 : x->old > y->old;
}

/* Sort the map for lookups; -1 if an old id is 0 or repeated. */
static int pprof_idmap_seal(struct pprof_idmap *m)
{
	int sorted = 1;

	for (size_t i = 1; i < m->n && sorted; i++)
		sorted = m->v[i - 1].old < m->v[i].old;
	if (!sorted)
		qsort(m->v, m->n, sizeof(*m->v), pprof_id_cmp);
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].old == 0 || (i && m->v[i - 1].old == m->v[i].old))
			return -1;
	return 0;
}

/* The new id for old, or 0 when old is not in the map. */
static uint64_t pprof_idmap_get(const struct pprof_idmap *m, uint64_t old)
{
	struct pprof_id key = { old, 0 };
	const struct pprof_id *hit;

	if (!m->n)
		return 0;
	hit = bsearch(&key, m->v, m->n, sizeof(*m->v), pprof_id_cmp);
	return hit ? hit->new : 0;
}

/* The string at index i of the message, or NULL when i is out of range. */
static const char *pprof_str(const Perftools__Profiles__Profile *m, int64_t i)
{
	if (i < 0 || (uint64_t)i >= m->n_string_table || !m->string_table[i])
		return NULL;
	return m->string_table[i];
}

static int pprof_dec_header(struct profile *p, const Perftools__Profiles__Profile *m)
{
	if (!m->n_string_table || !pprof_str(m, 0) || *pprof_str(m, 0))
		return -1;
	for (size_t i = 0; i < m->n_sample_type; i++) {
		const char *t = pprof_str(m, m->sample_type[i]->type);
		const char *u = pprof_str(m, m->sample_type[i]->unit);

		if (!t || !u || profile_add_sample_type(p, t, u) < 0)
			return -1;
	}
	if (m->period_type) {
		const char *t = pprof_str(m, m->period_type->type);
		const char *u = pprof_str(m, m->period_type->unit);

		if (!t || !u || profile_set_period(p, t, u, m->period) < 0)
			return -1;
	} else if (profile_set_period(p, "", "", m->period) < 0) {
		return -1;
	}
	profile_set_time(p, m->time_nanos, m->duration_nanos);
	for (size_t i = 0; i < m->n_comment; i++) {
		const char *c = pprof_str(m, m->comment[i]);

		if (!c || profile_add_comment(p, c) < 0)
			return -1;
	}
	if (m->default_sample_type) {
		const char *d = pprof_str(m, m->default_sample_type);

		if (!d || profile_set_default_sample_type(p, d) < 0)
			return -1;
	}
	return 0;
}

static int pprof_dec_mappings(struct profile *p, const Perftools__Profiles__Profile *m, struct pprof_idmap *map)
{
	for (size_t i = 0; i < m->n_mapping; i++) {
		const Perftools__Profiles__Mapping *pm = m->mapping[i];
		struct profile_mapping_in in = {
			.start = pm->memory_start,
			.limit = pm->memory_limit,
			.offset = pm->file_offset,
			.filename = pprof_str(m, pm->filename),
			.build_id = pprof_str(m, pm->build_id),
			.has_functions = pm->has_functions,
			.has_filenames = pm->has_filenames,
			.has_line_numbers = pm->has_line_numbers,
			.has_inline_frames = pm->has_inline_frames,
		};

		if (!in.filename || !in.build_id)
			return -1;
		map->v[i].old = pm->id;
		map->v[i].new = profile_add_mapping(p, &in);
		if (!map->v[i].new)
			return -1;
		map->n++;
	}
	return pprof_idmap_seal(map);
}

static int pprof_dec_functions(struct profile *p, const Perftools__Profiles__Profile *m, struct pprof_idmap *map)
{
	for (size_t i = 0; i < m->n_function; i++) {
		const Perftools__Profiles__Function *f = m->function[i];
		const char *name = pprof_str(m, f->name);
		const char *sys = pprof_str(m, f->system_name);
		const char *file = pprof_str(m, f->filename);

		if (!name || !sys || !file)
			return -1;
		map->v[i].old = f->id;
		map->v[i].new = profile_intern_function(p, name, sys, file, f->start_line);
		if (!map->v[i].new)
			return -1;
		map->n++;
	}
	return pprof_idmap_seal(map);
}

static int pprof_dec_locations(struct profile *p, const Perftools__Profiles__Profile *m,
			       const struct pprof_idmap *mappings,
			       const struct pprof_idmap *functions, struct pprof_idmap *map)
{
	struct profile_line lines[PROFILE_MAX_STACK];

	for (size_t i = 0; i < m->n_location; i++) {
		const Perftools__Profiles__Location *l = m->location[i];
		uint64_t mapping = 0;

		if (l->mapping_id && !(mapping = pprof_idmap_get(mappings, l->mapping_id)))
			return -1;
		if (l->n_line > PROFILE_MAX_STACK)
			return -1;
		for (size_t j = 0; j < l->n_line; j++) {
			lines[j].function_id = pprof_idmap_get(functions, l->line[j]->function_id);
			lines[j].line = l->line[j]->line;
			if (!lines[j].function_id)
				return -1;
		}
		map->v[i].old = l->id;
		map->v[i].new = profile_intern_location(p, mapping, l->address, lines, l->n_line);
		if (!map->v[i].new)
			return -1;
		map->n++;
	}
	return pprof_idmap_seal(map);
}

static int pprof_dec_samples(struct profile *p, const Perftools__Profiles__Profile *m,
			     const struct pprof_idmap *locations)
{
	uint64_t ids[PROFILE_MAX_STACK];
	struct profile_label_in labels[PROFILE_MAX_LABELS];

	for (size_t i = 0; i < m->n_sample; i++) {
		const Perftools__Profiles__Sample *s = m->sample[i];

		if (s->n_value != profile_nvalues(p) || s->n_location_id > PROFILE_MAX_STACK ||
		    s->n_label > PROFILE_MAX_LABELS)
			return -1;
		for (size_t j = 0; j < s->n_location_id; j++)
			if (!(ids[j] = pprof_idmap_get(locations, s->location_id[j])))
				return -1;
		for (size_t j = 0; j < s->n_label; j++) {
			const Perftools__Profiles__Label *l = s->label[j];

			labels[j].key = pprof_str(m, l->key);
			labels[j].str = l->str ? pprof_str(m, l->str) : NULL;
			labels[j].num = l->num;
			labels[j].num_unit = l->num_unit ? pprof_str(m, l->num_unit) : NULL;
			if (!labels[j].key || (l->str && !labels[j].str) ||
			    (l->num_unit && !labels[j].num_unit))
				return -1;
		}
		if (profile_add_sample(p, ids, s->n_location_id, s->value, labels, s->n_label) < 0)
			return -1;
	}
	return 0;
}

struct profile *pprof_read(const void *data, size_t len)
{
	struct buf plain;
	Perftools__Profiles__Profile *m = NULL;
	struct profile *p = NULL;
	struct pprof_idmap mappings = { NULL, 0 }, functions = { NULL, 0 };
	struct pprof_idmap locations = { NULL, 0 };

	buf_init(&plain, PPROF_MAX_DECODED);
	if (gzip_is_gzip(data, len)) {
		if (gzip_decompress(data, len, &plain) < 0)
			goto err;
		data = plain.data;
		len = plain.len;
	}
	m = perftools__profiles__profile__unpack(NULL, len, data);
	if (!m)
		goto err;
	p = profile_new();
	if (!p || !(mappings.v = pprof_calloc(m->n_mapping, sizeof(*mappings.v))) ||
	    !(functions.v = pprof_calloc(m->n_function, sizeof(*functions.v))) ||
	    !(locations.v = pprof_calloc(m->n_location, sizeof(*locations.v))))
		goto err;
	if (pprof_dec_header(p, m) < 0 || pprof_dec_mappings(p, m, &mappings) < 0 ||
	    pprof_dec_functions(p, m, &functions) < 0 ||
	    pprof_dec_locations(p, m, &mappings, &functions, &locations) < 0 ||
	    pprof_dec_samples(p, m, &locations) < 0 || profile_dropped(p))
		goto err;
	goto out;
err:
	profile_free(p);
	p = NULL;
out:
	free(mappings.v);
	free(functions.v);
	free(locations.v);
	if (m)
		perftools__profiles__profile__free_unpacked(m, NULL);
	buf_release(&plain);
	return p;
}
