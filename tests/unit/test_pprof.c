/*
 * test_pprof.c — the pprof writer and reader and the gzip layer under them.
 * A round trip must give back every field by content (ids may be
 * renumbered); hostile input — garbage, truncation, bit flips, and crafted
 * messages with dangling ids or string indices — must give NULL or a valid
 * profile, never a crash; gzip must respect the output limit and append
 * nothing on failure. Run under ASan/UBSan to make "no crash" mean more.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "model/profile.h"
#include "proto/profile.pb-c.h"
#include "writer/gzip.h"
#include "writer/pprof.h"

#define LIMIT ((size_t)64 << 20)

static struct profile *build(void)
{
	struct profile *p = profile_new();
	struct profile_mapping_in m1 = { 0x400000, 0x401000, 0, "/usr/bin/prog", "deadbeef",
					 1, 1, 1, 0 };
	struct profile_mapping_in m2 = { 0x7f0000000000, 0x7f0000100000, 0x2000,
					 "/lib/libc.so.6", "", 0, 0, 0, 0 };
	struct profile_label_in l1[2] = { { "thread", "main", 0, NULL }, { "pid", NULL, 42, NULL } };
	struct profile_label_in l2[1] = { { "bytes", NULL, 4096, "bytes" } };
	uint64_t mp1, mp2, fmain, fwork, finl, loc1, loc2, loc3, loc4;
	struct profile_line lmain = { 0, 12 }, lwork[2] = { { 0, 31 }, { 0, 25 } };

	assert_non_null(p);
	assert_int_equal(profile_add_sample_type(p, "samples", "count"), 0);
	assert_int_equal(profile_add_sample_type(p, "cpu", "nanoseconds"), 1);
	assert_int_equal(profile_set_period(p, "cpu", "nanoseconds", 10000000), 0);
	profile_set_time(p, 1700000000000000000, 3000000000);
	assert_int_equal(profile_add_comment(p, "cprof test"), 0);
	assert_int_equal(profile_add_comment(p, "second comment"), 0);
	assert_int_equal(profile_set_default_sample_type(p, "cpu"), 0);
	mp1 = profile_add_mapping(p, &m1);
	mp2 = profile_add_mapping(p, &m2);
	fmain = profile_intern_function(p, "main", "main", "main.c", 10);
	fwork = profile_intern_function(p, "work", "_Z4workv", "work.c", 20);
	finl = profile_intern_function(p, "inlined", "inlined", "work.c", 30);
	lmain.function_id = fmain;
	lwork[0].function_id = finl;
	lwork[1].function_id = fwork;
	loc1 = profile_intern_location(p, mp1, 0x400123, &lmain, 1);
	loc2 = profile_intern_location(p, mp1, 0x400456, lwork, 2);
	loc3 = profile_intern_location(p, mp2, 0x7f0000001234, NULL, 0);
	loc4 = profile_intern_location(p, 0, 0xffffffffff600000, NULL, 0);
	assert_true(mp1 && mp2 && fmain && fwork && finl && loc1 && loc2 && loc3 && loc4);
	{
		uint64_t s1[2] = { loc2, loc1 }, s2[3] = { loc3, loc2, loc1 }, s3[1] = { loc4 };
		int64_t v1[2] = { 1, 10000000 }, v2[2] = { 2, 20000000 }, v3[2] = { 1, -5 };

		assert_int_equal(profile_add_sample(p, s1, 2, v1, l1, 2), 0);
		assert_int_equal(profile_add_sample(p, s2, 3, v2, l2, 1), 0);
		assert_int_equal(profile_add_sample(p, s3, 1, v3, NULL, 0), 0);
		assert_int_equal(profile_add_sample(p, s1, 2, v1, NULL, 0), 0);
	}
	assert_int_equal(profile_dropped(p), 0);
	return p;
}

#define S(p, i) profile_string((p), (i))

static void same_mapping(const struct profile *p, const struct profile_mapping *a,
			 const struct profile *q, const struct profile_mapping *b)
{
	assert_true((a == NULL) == (b == NULL));
	if (!a)
		return;
	assert_int_equal(a->start, b->start);
	assert_int_equal(a->limit, b->limit);
	assert_int_equal(a->offset, b->offset);
	assert_string_equal(S(p, a->filename), S(q, b->filename));
	assert_string_equal(S(p, a->build_id), S(q, b->build_id));
	assert_int_equal(a->has_functions, b->has_functions);
	assert_int_equal(a->has_filenames, b->has_filenames);
	assert_int_equal(a->has_line_numbers, b->has_line_numbers);
	assert_int_equal(a->has_inline_frames, b->has_inline_frames);
}

static void same_function(const struct profile *p, const struct profile_function *a,
			  const struct profile *q, const struct profile_function *b)
{
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(S(p, a->name), S(q, b->name));
	assert_string_equal(S(p, a->system_name), S(q, b->system_name));
	assert_string_equal(S(p, a->filename), S(q, b->filename));
	assert_int_equal(a->start_line, b->start_line);
}

static void same_location(const struct profile *p, const struct profile_location *a,
			  const struct profile *q, const struct profile_location *b)
{
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->address, b->address);
	same_mapping(p, profile_mapping(p, a->mapping_id), q, profile_mapping(q, b->mapping_id));
	assert_int_equal(a->nlines, b->nlines);
	for (size_t i = 0; i < a->nlines; i++) {
		assert_int_equal(a->lines[i].line, b->lines[i].line);
		same_function(p, profile_function(p, a->lines[i].function_id), q,
			      profile_function(q, b->lines[i].function_id));
	}
}

static int same_label(const struct profile *p, const struct profile_label *a,
		      const struct profile *q, const struct profile_label *b)
{
	return strcmp(S(p, a->key), S(q, b->key)) == 0 && strcmp(S(p, a->str), S(q, b->str)) == 0 &&
	       a->num == b->num && strcmp(S(p, a->num_unit), S(q, b->num_unit)) == 0;
}

static void same_profile(const struct profile *p, const struct profile *q)
{
	size_t np, nq, nv = profile_nvalues(p);
	const int64_t *cp, *cq;
	const struct profile_mapping *mp, *mq;
	const struct profile_function *fp, *fq;
	const struct profile_location *lp, *lq;
	const struct profile_sample *sp, *sq;

	assert_int_equal(nv, profile_nvalues(q));
	for (size_t i = 0; i < nv; i++) {
		assert_string_equal(S(p, profile_sample_types(p)[i].type),
				    S(q, profile_sample_types(q)[i].type));
		assert_string_equal(S(p, profile_sample_types(p)[i].unit),
				    S(q, profile_sample_types(q)[i].unit));
	}
	assert_string_equal(S(p, profile_period_type(p).type), S(q, profile_period_type(q).type));
	assert_string_equal(S(p, profile_period_type(p).unit), S(q, profile_period_type(q).unit));
	assert_int_equal(profile_period(p), profile_period(q));
	assert_int_equal(profile_time_nanos(p), profile_time_nanos(q));
	assert_int_equal(profile_duration_nanos(p), profile_duration_nanos(q));
	assert_string_equal(S(p, profile_default_sample_type(p)),
			    S(q, profile_default_sample_type(q)));
	cp = profile_comments(p, &np);
	cq = profile_comments(q, &nq);
	assert_int_equal(np, nq);
	for (size_t i = 0; i < np; i++)
		assert_string_equal(S(p, cp[i]), S(q, cq[i]));
	mp = profile_mappings(p, &np);
	mq = profile_mappings(q, &nq);
	assert_int_equal(np, nq);
	for (size_t i = 0; i < np; i++) {
		assert_int_equal(mq[i].id, i + 1);
		same_mapping(p, &mp[i], q, &mq[i]);
	}
	fp = profile_functions(p, &np);
	fq = profile_functions(q, &nq);
	assert_int_equal(np, nq);
	for (size_t i = 0; i < np; i++)
		same_function(p, &fp[i], q, &fq[i]);
	lp = profile_locations(p, &np);
	lq = profile_locations(q, &nq);
	assert_int_equal(np, nq);
	for (size_t i = 0; i < np; i++)
		same_location(p, &lp[i], q, &lq[i]);
	sp = profile_samples(p, &np);
	sq = profile_samples(q, &nq);
	assert_int_equal(np, nq);
	for (size_t i = 0; i < np; i++) {
		assert_int_equal(sp[i].nlocations, sq[i].nlocations);
		for (size_t j = 0; j < sp[i].nlocations; j++)
			same_location(p, profile_location(p, sp[i].location_ids[j]), q,
				      profile_location(q, sq[i].location_ids[j]));
		assert_memory_equal(sp[i].values, sq[i].values, nv * sizeof(int64_t));
		assert_int_equal(sp[i].nlabels, sq[i].nlabels);
		for (size_t j = 0; j < sp[i].nlabels; j++) {
			size_t k = 0;

			while (k < sq[i].nlabels && !same_label(p, &sp[i].labels[j], q, &sq[i].labels[k]))
				k++;
			assert_true(k < sq[i].nlabels);
		}
	}
}

static void test_round_trip(void **state)
{
	struct profile *p = build(), *q;
	struct buf out;

	(void)state;
	buf_init(&out, LIMIT);
	assert_int_equal(pprof_write(p, &out), 0);
	assert_true(out.len > 20);
	assert_int_equal(out.data[0], 0x1f);
	assert_int_equal(out.data[1], 0x8b);
	assert_true(gzip_is_gzip(out.data, out.len));
	q = pprof_read(out.data, out.len);
	assert_non_null(q);
	same_profile(p, q);
	/* Writing the decoded profile again gives the same bytes. */
	{
		struct buf again;

		buf_init(&again, LIMIT);
		assert_int_equal(pprof_write(q, &again), 0);
		assert_int_equal(again.len, out.len);
		assert_memory_equal(again.data, out.data, out.len);
		buf_release(&again);
	}
	profile_free(q);
	/* The plain message reads too. */
	{
		struct buf plain;

		buf_init(&plain, LIMIT);
		assert_int_equal(gzip_decompress(out.data, out.len, &plain), 0);
		q = pprof_read(plain.data, plain.len);
		assert_non_null(q);
		same_profile(p, q);
		profile_free(q);
		buf_release(&plain);
	}
	buf_release(&out);
	profile_free(p);
}

static void test_empty_profile(void **state)
{
	struct profile *p = profile_new(), *q;
	struct buf out;
	size_t n;

	(void)state;
	buf_init(&out, LIMIT);
	assert_int_equal(pprof_write(p, &out), 0);
	q = pprof_read(out.data, out.len);
	assert_non_null(q);
	assert_int_equal(profile_nvalues(q), 0);
	profile_samples(q, &n);
	assert_int_equal(n, 0);
	profile_free(q);
	profile_free(p);
	buf_release(&out);
}

static void test_write_limit(void **state)
{
	struct profile *p = build();
	struct buf out;

	(void)state;
	buf_init(&out, 40);
	assert_int_equal(buf_append(&out, "prefix", 6), 0);
	assert_int_equal(pprof_write(p, &out), -1);
	assert_int_equal(out.len, 6);
	assert_string_equal((char *)out.data, "prefix");
	buf_release(&out);
	profile_free(p);
}

static uint32_t rng(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void test_garbage(void **state)
{
	unsigned char junk[512];
	uint32_t seed = 1;

	(void)state;
	assert_null(pprof_read("", 0));
	assert_null(pprof_read("\x1f\x8b", 2));
	for (int round = 0; round < 2000; round++) {
		size_t n = rng(&seed) % sizeof(junk);

		for (size_t i = 0; i < n; i++)
			junk[i] = (unsigned char)rng(&seed);
		if (round % 3 == 0 && n >= 2) {
			junk[0] = 0x1f;
			junk[1] = 0x8b;
		}
		assert_null(pprof_read(junk, n));
	}
}

static void test_truncated_and_flipped(void **state)
{
	struct profile *p = build(), *q;
	struct buf out, plain;
	unsigned char *copy;
	size_t nnull = 0;

	(void)state;
	buf_init(&out, LIMIT);
	buf_init(&plain, LIMIT);
	assert_int_equal(pprof_write(p, &out), 0);
	assert_int_equal(gzip_decompress(out.data, out.len, &plain), 0);
	/* gzip ends with a CRC and length: every cut is detected. */
	for (size_t n = 0; n < out.len; n++)
		assert_null(pprof_read(out.data, n));
	/* A cut protobuf may end on a field boundary and parse; it must then
	 * still be a valid profile, and most cuts must not parse. */
	for (size_t n = 0; n < plain.len; n++) {
		q = pprof_read(plain.data, n);
		nnull += q == NULL;
		profile_free(q);
	}
	assert_true(nnull > plain.len / 2);
	copy = malloc(plain.len);
	assert_non_null(copy);
	for (size_t i = 0; i < plain.len * 8; i++) {
		memcpy(copy, plain.data, plain.len);
		copy[i / 8] ^= (unsigned char)(1u << (i % 8));
		profile_free(pprof_read(copy, plain.len));
	}
	free(copy);
	buf_release(&plain);
	buf_release(&out);
	profile_free(p);
}

/* A small valid message built by hand, to break one field at a time. */
struct craft {
	Perftools__Profiles__Profile m;
	Perftools__Profiles__ValueType vt, *vtp[1];
	Perftools__Profiles__Mapping map, *mapp[1];
	Perftools__Profiles__Function fn, *fnp[1];
	Perftools__Profiles__Line line, *linep[1];
	Perftools__Profiles__Location loc[2], *locp[2];
	Perftools__Profiles__Label lab, *labp[1];
	Perftools__Profiles__Sample smp, *smpp[1];
	char *strings[6];
	uint64_t stack[2];
	int64_t value[1];
	int64_t comment[1];
};

static void craft_init(struct craft *c)
{
	static const char *const strs[6] = { "", "cpu", "nanoseconds", "main", "/bin/x", "k" };

	memset(c, 0, sizeof(*c));
	perftools__profiles__profile__init(&c->m);
	perftools__profiles__value_type__init(&c->vt);
	perftools__profiles__mapping__init(&c->map);
	perftools__profiles__function__init(&c->fn);
	perftools__profiles__line__init(&c->line);
	perftools__profiles__location__init(&c->loc[0]);
	perftools__profiles__location__init(&c->loc[1]);
	perftools__profiles__label__init(&c->lab);
	perftools__profiles__sample__init(&c->smp);
	for (int i = 0; i < 6; i++)
		c->strings[i] = (char *)strs[i];
	c->m.n_string_table = 6;
	c->m.string_table = c->strings;
	c->vt.type = 1;
	c->vt.unit = 2;
	c->vtp[0] = &c->vt;
	c->m.n_sample_type = 1;
	c->m.sample_type = c->vtp;
	c->map.id = 7; /* ids need not be dense */
	c->map.memory_start = 0x1000;
	c->map.memory_limit = 0x2000;
	c->map.filename = 4;
	c->mapp[0] = &c->map;
	c->m.n_mapping = 1;
	c->m.mapping = c->mapp;
	c->fn.id = 100;
	c->fn.name = 3;
	c->fnp[0] = &c->fn;
	c->m.n_function = 1;
	c->m.function = c->fnp;
	c->line.function_id = 100;
	c->line.line = 9;
	c->linep[0] = &c->line;
	c->loc[0].id = 5000;
	c->loc[0].mapping_id = 7;
	c->loc[0].address = 0x1100;
	c->loc[0].n_line = 1;
	c->loc[0].line = c->linep;
	c->loc[1].id = 3;
	c->loc[1].address = 0x99;
	c->locp[0] = &c->loc[0];
	c->locp[1] = &c->loc[1];
	c->m.n_location = 2;
	c->m.location = c->locp;
	c->lab.key = 5;
	c->lab.num = 3;
	c->labp[0] = &c->lab;
	c->stack[0] = 3;
	c->stack[1] = 5000;
	c->value[0] = 77;
	c->smp.n_location_id = 2;
	c->smp.location_id = c->stack;
	c->smp.n_value = 1;
	c->smp.value = c->value;
	c->smp.n_label = 1;
	c->smp.label = c->labp;
	c->smpp[0] = &c->smp;
	c->m.n_sample = 1;
	c->m.sample = c->smpp;
	c->comment[0] = 3;
	c->m.n_comment = 1;
	c->m.comment = c->comment;
	c->m.default_sample_type = 1;
}

static struct profile *craft_read(struct craft *c)
{
	size_t n = protobuf_c_message_get_packed_size(&c->m.base);
	unsigned char *b = malloc(n + 1);
	struct profile *p;

	assert_non_null(b);
	assert_int_equal(protobuf_c_message_pack(&c->m.base, b), n);
	p = pprof_read(b, n);
	free(b);
	return p;
}

static void test_crafted_valid(void **state)
{
	struct craft c;
	struct profile *p;
	const struct profile_sample *s;
	const struct profile_location *l;
	size_t n;

	(void)state;
	craft_init(&c);
	p = craft_read(&c);
	assert_non_null(p);
	s = profile_samples(p, &n);
	assert_int_equal(n, 1);
	assert_int_equal(s[0].values[0], 77);
	assert_int_equal(s[0].nlocations, 2);
	l = profile_location(p, s[0].location_ids[0]);
	assert_int_equal(l->address, 0x99);
	assert_int_equal(l->mapping_id, 0);
	l = profile_location(p, s[0].location_ids[1]);
	assert_int_equal(l->address, 0x1100);
	assert_int_equal(profile_mapping(p, l->mapping_id)->start, 0x1000);
	assert_string_equal(S(p, profile_function(p, l->lines[0].function_id)->name), "main");
	assert_string_equal(S(p, s[0].labels[0].key), "k");
	assert_int_equal(s[0].labels[0].num, 3);
	assert_string_equal(S(p, profile_default_sample_type(p)), "cpu");
	profile_free(p);
}

static void test_crafted_invalid(void **state)
{
	struct craft c;
	char *bad0 = "x";

	(void)state;
#define BROKEN(stmt)                                 \
	do {                                         \
		craft_init(&c);                      \
		stmt;                                \
		assert_null(craft_read(&c));         \
	} while (0)
	BROKEN(c.strings[0] = bad0);
	BROKEN(c.m.n_string_table = 0);
	BROKEN(c.vt.type = 6);
	BROKEN(c.vt.unit = -1);
	BROKEN(c.map.filename = 60);
	BROKEN(c.map.id = 0);
	BROKEN(c.fn.name = 1 << 20);
	BROKEN(c.fn.id = 0);
	BROKEN(c.line.function_id = 101);
	BROKEN(c.loc[0].mapping_id = 8);
	BROKEN(c.loc[1].id = 5000);
	BROKEN((c.loc[1].id = 5000, c.stack[0] = 5000)); /* only the repeat is wrong */
	BROKEN(c.loc[1].id = 0);
	BROKEN(c.stack[0] = 4);
	BROKEN(c.smp.n_value = 0);
	BROKEN(c.lab.key = 6);
	BROKEN((c.lab.str = 9, c.lab.num = 0));
	BROKEN(c.lab.num_unit = -3);
	BROKEN(c.comment[0] = 6);
	BROKEN(c.m.default_sample_type = 3);
	BROKEN(c.m.default_sample_type = 99);
#undef BROKEN
}

static void test_gzip_round_trip(void **state)
{
	size_t n = 3 << 20;
	unsigned char *data = malloc(n);
	struct buf z, out;
	uint32_t seed = 7;

	(void)state;
	assert_non_null(data);
	for (size_t i = 0; i < n; i++)
		data[i] = i < n / 2 ? (unsigned char)(i % 251) : (unsigned char)rng(&seed);
	buf_init(&z, LIMIT);
	buf_init(&out, LIMIT);
	assert_int_equal(gzip_compress(data, n, &z), 0);
	assert_true(gzip_is_gzip(z.data, z.len));
	assert_true(z.len < n);
	assert_int_equal(gzip_decompress(z.data, z.len, &out), 0);
	assert_int_equal(out.len, n);
	assert_memory_equal(out.data, data, n);
	assert_int_equal(out.data[n], 0);
	buf_release(&out);

	/* Exactly at the limit fits; one byte less appends nothing. */
	buf_init(&out, n + 3);
	assert_int_equal(buf_append(&out, "abc", 3), 0);
	assert_int_equal(gzip_decompress(z.data, z.len, &out), 0);
	assert_int_equal(out.len, n + 3);
	assert_memory_equal(out.data + 3, data, n);
	buf_release(&out);
	buf_init(&out, n + 2);
	assert_int_equal(buf_append(&out, "abc", 3), 0);
	assert_int_equal(gzip_decompress(z.data, z.len, &out), -1);
	assert_int_equal(out.len, 3);
	assert_string_equal((char *)out.data, "abc");
	buf_release(&out);

	/* Compression past the limit fails whole too. */
	buf_init(&out, z.len / 2);
	assert_int_equal(buf_append(&out, "abc", 3), 0);
	assert_int_equal(gzip_compress(data, n, &out), -1);
	assert_int_equal(out.len, 3);
	assert_string_equal((char *)out.data, "abc");
	buf_release(&out);
	buf_release(&z);
	free(data);
}

static void test_gzip_edges(void **state)
{
	struct buf a, b, out;

	(void)state;
	buf_init(&a, LIMIT);
	buf_init(&b, LIMIT);
	buf_init(&out, LIMIT);
	assert_int_equal(gzip_compress("", 0, &a), 0);
	assert_true(gzip_is_gzip(a.data, a.len));
	assert_int_equal(gzip_decompress(a.data, a.len, &out), 0);
	assert_int_equal(out.len, 0);
	buf_release(&a);

	/* Two members concatenated are one stream. */
	assert_int_equal(gzip_compress("hello ", 6, &a), 0);
	assert_int_equal(buf_append(&b, a.data, a.len), 0);
	assert_int_equal(gzip_compress("world", 5, &b), 0);
	assert_int_equal(gzip_decompress(b.data, b.len, &out), 0);
	assert_int_equal(out.len, 5 + 6);
	assert_string_equal((char *)out.data, "hello world");
	buf_release(&out);

	/* Trailing garbage, truncation and non-gzip data fail, appending nothing. */
	assert_int_equal(buf_append(&b, "junk", 4), 0);
	assert_int_equal(gzip_decompress(b.data, b.len, &out), -1);
	assert_int_equal(out.len, 0);
	for (size_t n = 0; n < a.len; n++)
		assert_int_equal(gzip_decompress(a.data, n, &out), -1);
	assert_int_equal(out.len, 0);
	assert_int_equal(gzip_decompress("plain text", 10, &out), -1);
	assert_false(gzip_is_gzip("plain text", 10));
	assert_false(gzip_is_gzip("\x1f", 1));
	assert_int_equal(out.len, 0);
	buf_release(&a);
	buf_release(&b);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_write_limit),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_truncated_and_flipped),
		cmocka_unit_test(test_crafted_valid),
		cmocka_unit_test(test_crafted_invalid),
		cmocka_unit_test(test_gzip_round_trip),
		cmocka_unit_test(test_gzip_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
