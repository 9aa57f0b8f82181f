/*
 * test_model.c — the invariants of model/profile.h: interning returns stable
 * ids, samples merge on (stack, label set) regardless of label order, caps
 * fail cleanly and are counted, and sample types freeze at the first
 * sample. The large tests also guard the O(1) add: a quadratic table would
 * make them time out rather than fail an assertion.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "model/profile.h"

static int setup(void **state)
{
	struct profile *p = profile_new();

	if (!p || profile_add_sample_type(p, "samples", "count") != 0 ||
	    profile_add_sample_type(p, "cpu", "nanoseconds") != 1)
		return -1;
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	profile_free(*state);
	return 0;
}

/* A location for a function called name in mapping 0 at addr. */
static uint64_t loc(struct profile *p, const char *name, uint64_t addr)
{
	struct profile_line l = { profile_intern_function(p, name, name, "f.c", 1), 7 };

	assert_int_not_equal(l.function_id, 0);
	return profile_intern_location(p, 0, addr, &l, 1);
}

static void test_strings(void **state)
{
	struct profile *p = *state;
	size_t n0 = profile_nstrings(p);
	int64_t a = profile_intern_string(p, "alpha");

	assert_int_equal(profile_intern_string(p, ""), 0);
	assert_int_equal(profile_intern_string(p, NULL), 0);
	assert_true(a > 0);
	assert_int_equal(profile_intern_string(p, "alpha"), a);
	assert_int_not_equal(profile_intern_string(p, "beta"), a);
	assert_int_equal(profile_nstrings(p), n0 + 2);
	assert_string_equal(profile_string(p, a), "alpha");
	assert_string_equal(profile_string(p, 0), "");
	assert_string_equal(profile_string(p, -1), "");
	assert_string_equal(profile_string(p, 1 << 30), "");
	assert_int_equal(profile_dropped(p), 0);
}

static void test_functions(void **state)
{
	struct profile *p = *state;
	uint64_t f1 = profile_intern_function(p, "main", "main", "main.c", 10);
	uint64_t f2 = profile_intern_function(p, "main", "main", "main.c", 11);
	uint64_t f3 = profile_intern_function(p, "main", "_Z4mainv", "main.c", 10);
	const struct profile_function *f;
	size_t n;

	assert_int_equal(f1, 1);
	assert_int_equal(f2, 2);
	assert_int_equal(f3, 3);
	assert_int_equal(profile_intern_function(p, "main", "main", "main.c", 10), f1);
	assert_int_equal(profile_intern_function(p, "main", "main", "main.c", 11), f2);
	f = profile_functions(p, &n);
	assert_int_equal(n, 3);
	assert_int_equal(f[1].id, 2);
	assert_string_equal(profile_string(p, f[2].system_name), "_Z4mainv");
	assert_int_equal(f[1].start_line, 11);
	assert_ptr_equal(profile_function(p, 3), &f[2]);
	assert_null(profile_function(p, 0));
	assert_null(profile_function(p, 4));
}

static void test_locations(void **state)
{
	struct profile *p = *state;
	struct profile_mapping_in min = { 0x1000, 0x2000, 0, "/bin/x", "abcd", 1, 0, 0, 0 };
	uint64_t m = profile_add_mapping(p, &min);
	uint64_t fa = profile_intern_function(p, "a", "", "", 0);
	uint64_t fb = profile_intern_function(p, "b", "", "", 0);
	struct profile_line ab[2] = { { fa, 3 }, { fb, 4 } }, ba[2] = { { fb, 4 }, { fa, 3 } };
	struct profile_line bad = { 99, 1 };
	uint64_t l1, l2, l3, l4;
	const struct profile_location *l;

	assert_int_equal(m, 1);
	l1 = profile_intern_location(p, m, 0x1234, ab, 2);
	l2 = profile_intern_location(p, m, 0x1234, ba, 2);
	l3 = profile_intern_location(p, 0, 0x1234, ab, 2);
	l4 = profile_intern_location(p, m, 0x1234, NULL, 0);
	assert_int_equal(l1, 1);
	assert_int_equal(l2, 2);
	assert_int_equal(l3, 3);
	assert_int_equal(l4, 4);
	assert_int_equal(profile_intern_location(p, m, 0x1234, ab, 2), l1);
	assert_int_equal(profile_intern_location(p, m, 0x1234, NULL, 0), l4);
	assert_int_equal(profile_intern_location(p, 2, 0x1234, NULL, 0), 0);
	assert_int_equal(profile_intern_location(p, m, 0x1234, &bad, 1), 0);
	l = profile_location(p, l2);
	assert_non_null(l);
	assert_int_equal(l->mapping_id, m);
	assert_int_equal(l->address, 0x1234);
	assert_int_equal(l->nlines, 2);
	assert_int_equal(l->lines[0].function_id, fb);
	assert_int_equal(l->lines[1].line, 3);
	assert_null(profile_location(p, 5));
	assert_int_equal(profile_dropped(p), 0);
}

static void test_merge(void **state)
{
	struct profile *p = *state;
	uint64_t a = loc(p, "a", 0x10), b = loc(p, "b", 0x20);
	uint64_t ab[2] = { a, b }, ba[2] = { b, a };
	int64_t v1[2] = { 1, 100 }, v2[2] = { 2, 250 };
	const struct profile_sample *s;
	size_t n;

	assert_int_equal(profile_add_sample(p, ab, 2, v1, NULL, 0), 0);
	assert_int_equal(profile_add_sample(p, ab, 2, v2, NULL, 0), 0);
	assert_int_equal(profile_add_sample(p, ba, 2, v1, NULL, 0), 0);
	assert_int_equal(profile_add_sample(p, ab, 1, v1, NULL, 0), 0);
	assert_int_equal(profile_add_sample(p, NULL, 0, v1, NULL, 0), 0);
	s = profile_samples(p, &n);
	assert_int_equal(n, 4);
	assert_int_equal(s[0].nlocations, 2);
	assert_int_equal(s[0].location_ids[0], a);
	assert_int_equal(s[0].location_ids[1], b);
	assert_int_equal(s[0].values[0], 3);
	assert_int_equal(s[0].values[1], 350);
	assert_int_equal(s[1].location_ids[0], b);
	assert_int_equal(s[1].values[1], 100);
	assert_int_equal(s[2].nlocations, 1);
	assert_int_equal(s[3].nlocations, 0);
	/* An unknown location is refused, and is not a cap. */
	ab[1] = 77;
	assert_int_equal(profile_add_sample(p, ab, 2, v1, NULL, 0), -1);
	assert_int_equal(profile_dropped(p), 0);
}

static void test_label_order(void **state)
{
	struct profile *p = *state;
	uint64_t a = loc(p, "a", 0x10);
	struct profile_label_in xy[3] = {
		{ "thread", "main", 0, NULL }, { "bytes", NULL, 64, "bytes" }, { "pid", NULL, 42, NULL }
	};
	struct profile_label_in yx[3] = { xy[2], xy[0], xy[1] };
	int64_t v[2] = { 1, 10 };
	const struct profile_sample *s;
	size_t n;

	assert_int_equal(profile_add_sample(p, &a, 1, v, xy, 3), 0);
	assert_int_equal(profile_add_sample(p, &a, 1, v, yx, 3), 0);
	s = profile_samples(p, &n);
	assert_int_equal(n, 1);
	assert_int_equal(s[0].values[0], 2);
	assert_int_equal(s[0].values[1], 20);
	assert_int_equal(s[0].nlabels, 3);
	for (size_t i = 0; i < 3; i++) {
		const char *key = profile_string(p, s[0].labels[i].key);

		if (strcmp(key, "thread") == 0) {
			assert_string_equal(profile_string(p, s[0].labels[i].str), "main");
		} else if (strcmp(key, "bytes") == 0) {
			assert_int_equal(s[0].labels[i].num, 64);
			assert_string_equal(profile_string(p, s[0].labels[i].num_unit), "bytes");
		} else {
			assert_string_equal(key, "pid");
			assert_int_equal(s[0].labels[i].num, 42);
			assert_int_equal(s[0].labels[i].str, 0);
		}
	}
}

static void test_labels_differ(void **state)
{
	struct profile *p = *state;
	uint64_t a = loc(p, "a", 0x10);
	struct profile_label_in l[] = {
		{ "pid", NULL, 1, NULL },   { "pid", NULL, 2, NULL },    { "pid", "1", 0, NULL },
		{ "tid", NULL, 1, NULL },   { "pid", NULL, 1, "units" },
	};
	int64_t v[2] = { 1, 1 };
	size_t n;

	assert_int_equal(profile_add_sample(p, &a, 1, v, NULL, 0), 0);
	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++)
		assert_int_equal(profile_add_sample(p, &a, 1, v, &l[i], 1), 0);
	assert_int_equal(profile_add_sample(p, &a, 1, v, l, 2), 0);
	profile_samples(p, &n);
	assert_int_equal(n, 7);
	/* The same again merges into each of them. */
	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++)
		assert_int_equal(profile_add_sample(p, &a, 1, v, &l[i], 1), 0);
	profile_samples(p, &n);
	assert_int_equal(n, 7);
	assert_int_equal(profile_samples(p, &n)[1].values[0], 2);
}

static void test_types_frozen(void **state)
{
	struct profile *p = *state;
	uint64_t a = loc(p, "a", 0x10);
	int64_t v[2] = { 1, 2 };

	assert_int_equal(profile_set_default_sample_type(p, "cpu"), 0);
	assert_string_equal(profile_string(p, profile_default_sample_type(p)), "cpu");
	assert_int_equal(profile_set_default_sample_type(p, "wall"), -1);
	assert_int_equal(profile_set_default_sample_type(p, "nanoseconds"), -1);
	assert_string_equal(profile_string(p, profile_default_sample_type(p)), "cpu");
	assert_int_equal(profile_add_sample(p, &a, 1, v, NULL, 0), 0);
	assert_int_equal(profile_add_sample_type(p, "wall", "nanoseconds"), -1);
	assert_int_equal(profile_nvalues(p), 2);
	assert_string_equal(profile_string(p, profile_sample_types(p)[1].unit), "nanoseconds");
	assert_int_equal(profile_dropped(p), 0);
}

static void test_no_types(void **state)
{
	struct profile *p = profile_new();
	int64_t v = 1;

	(void)state;
	assert_non_null(p);
	assert_int_equal(profile_nvalues(p), 0);
	assert_int_equal(profile_add_sample(p, NULL, 0, &v, NULL, 0), -1);
	for (int i = 0; i < PROFILE_MAX_VALUES; i++)
		assert_int_equal(profile_add_sample_type(p, "t", "u"), i);
	assert_int_equal(profile_add_sample_type(p, "t", "u"), -1);
	assert_int_equal(profile_dropped(p), 1);
	assert_int_equal(profile_nvalues(p), PROFILE_MAX_VALUES);
	profile_free(p);
	profile_free(NULL);
}

static void test_header_fields(void **state)
{
	struct profile *p = *state;
	struct profile_value_type pt;
	const int64_t *c;
	size_t n;

	assert_int_equal(profile_set_period(p, "cpu", "nanoseconds", 10000000), 0);
	profile_set_time(p, 1700000000123456789, 2500000000);
	pt = profile_period_type(p);
	assert_string_equal(profile_string(p, pt.type), "cpu");
	assert_string_equal(profile_string(p, pt.unit), "nanoseconds");
	assert_int_equal(profile_period(p), 10000000);
	assert_int_equal(profile_time_nanos(p), 1700000000123456789);
	assert_int_equal(profile_duration_nanos(p), 2500000000);
	for (int i = 0; i < PROFILE_MAX_COMMENTS; i++)
		assert_int_equal(profile_add_comment(p, i ? "more" : "first"), 0);
	assert_int_equal(profile_add_comment(p, "one too many"), -1);
	assert_int_equal(profile_dropped(p), 1);
	c = profile_comments(p, &n);
	assert_int_equal(n, PROFILE_MAX_COMMENTS);
	assert_string_equal(profile_string(p, c[0]), "first");
	assert_string_equal(profile_string(p, c[n - 1]), "more");
}

static void test_mappings(void **state)
{
	struct profile *p = *state;
	struct profile_mapping_in in = { 0x400000, 0x401000, 0x1000, NULL, NULL, 0, 0, 0, 0 };
	const struct profile_mapping *m;
	size_t n;

	for (uint64_t i = 1; i <= PROFILE_MAX_MAPPINGS; i++) {
		in.start = i << 12;
		assert_int_equal(profile_add_mapping(p, &in), i);
	}
	assert_int_equal(profile_dropped(p), 0);
	assert_int_equal(profile_add_mapping(p, &in), 0);
	assert_int_equal(profile_dropped(p), 1);
	m = profile_mappings(p, &n);
	assert_int_equal(n, PROFILE_MAX_MAPPINGS);
	assert_int_equal(m[0].start, 1 << 12);
	assert_int_equal(m[0].filename, 0);
	assert_int_equal(m[0].has_functions, 0);
	assert_int_equal(profile_mapping_set_flags(p, 1, 1, 1, 7, 0), 0);
	assert_int_equal(profile_mapping(p, 1)->has_functions, 1);
	assert_int_equal(profile_mapping(p, 1)->has_line_numbers, 1);
	assert_int_equal(profile_mapping_set_flags(p, 0, 1, 1, 1, 1), -1);
	assert_int_equal(profile_mapping_set_flags(p, n + 1, 1, 1, 1, 1), -1);
	assert_null(profile_mapping(p, n + 1));
	assert_int_equal(profile_mapping(p, n)->offset, 0x1000);
}

static void test_stack_and_label_caps(void **state)
{
	struct profile *p = *state;
	static uint64_t stack[PROFILE_MAX_STACK + 1];
	struct profile_label_in labels[PROFILE_MAX_LABELS + 1];
	int64_t v[2] = { 1, 1 };
	size_t n;

	for (size_t i = 0; i <= PROFILE_MAX_STACK; i++)
		stack[i] = loc(p, "f", 0x1000 + i);
	for (size_t i = 0; i <= PROFILE_MAX_LABELS; i++)
		labels[i] = (struct profile_label_in){ "k", NULL, (int64_t)i, NULL };
	assert_int_equal(profile_add_sample(p, stack, PROFILE_MAX_STACK + 1, v, NULL, 0), -1);
	assert_int_equal(profile_dropped(p), 1);
	assert_int_equal(profile_add_sample(p, stack, 1, v, labels, PROFILE_MAX_LABELS + 1), -1);
	assert_int_equal(profile_dropped(p), 2);
	profile_samples(p, &n);
	assert_int_equal(n, 0);
	/* At the caps exactly, and the profile still takes samples. */
	assert_int_equal(profile_add_sample(p, stack, PROFILE_MAX_STACK, v, NULL, 0), 0);
	assert_int_equal(profile_add_sample(p, stack, 1, v, labels, PROFILE_MAX_LABELS), 0);
	profile_samples(p, &n);
	assert_int_equal(n, 2);
	assert_int_equal(profile_samples(p, &n)[0].nlocations, PROFILE_MAX_STACK);
	assert_int_equal(profile_dropped(p), 2);
}

static void test_string_cap(void **state)
{
	struct profile *p = *state;
	char name[32];
	int64_t last = 0;

	for (size_t i = profile_nstrings(p); i < PROFILE_MAX_STRINGS; i++) {
		snprintf(name, sizeof(name), "s%zu", i);
		last = profile_intern_string(p, name);
		if (last < 0)
			break;
	}
	assert_int_equal(last, PROFILE_MAX_STRINGS - 1);
	assert_int_equal(profile_nstrings(p), PROFILE_MAX_STRINGS);
	assert_int_equal(profile_dropped(p), 0);
	assert_int_equal(profile_intern_string(p, "new"), -1);
	assert_int_equal(profile_intern_function(p, "new", "", "", 0), 0);
	assert_int_equal(profile_dropped(p), 2);
	/* Known strings still intern, and the table is intact. */
	assert_int_equal(profile_intern_string(p, "cpu"), profile_sample_types(p)[1].type);
	snprintf(name, sizeof(name), "s%zu", (size_t)PROFILE_MAX_STRINGS / 2);
	assert_string_equal(profile_string(p, PROFILE_MAX_STRINGS / 2), name);
}

static void test_many_samples(void **state)
{
	struct profile *p = *state;
	enum { NFUNC = 1000, NADD = 1000000, DEPTH = 24 };
	static uint64_t locs[NFUNC];
	uint64_t stack[DEPTH];
	int64_t v[2] = { 1, 10 };
	const struct profile_sample *s;
	size_t n, distinct = NADD / 5;
	int64_t total = 0;
	char name[32];

	for (size_t i = 0; i < NFUNC; i++) {
		snprintf(name, sizeof(name), "fn%zu", i);
		locs[i] = loc(p, name, 0x1000 + i);
	}
	for (size_t i = 0; i < NADD; i++) {
		size_t k = i % distinct;

		for (size_t d = 0; d < DEPTH; d++)
			stack[d] = locs[(k * 31 + d * (k % 97 + 1)) % NFUNC];
		stack[0] = locs[k % NFUNC];
		stack[1] = locs[(k / NFUNC) % NFUNC];
		assert_int_equal(profile_add_sample(p, stack, DEPTH, v, NULL, 0), 0);
	}
	s = profile_samples(p, &n);
	assert_int_equal(n, distinct);
	for (size_t i = 0; i < n; i++)
		total += s[i].values[1];
	assert_int_equal(total, (int64_t)NADD * 10);
	assert_int_equal(s[7].values[0], 5);
	assert_int_equal(profile_dropped(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_strings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_functions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_label_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_labels_differ, setup, teardown),
		cmocka_unit_test_setup_teardown(test_types_frozen, setup, teardown),
		cmocka_unit_test(test_no_types),
		cmocka_unit_test_setup_teardown(test_header_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mappings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stack_and_label_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_string_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_samples, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
