/*
 * test_toptab.c — the tables of `cprof-attach top` against hand-built
 * profiles: self is the leaf's, total counts a recursing function once
 * per sample, the last interval starts again while the span since the
 * start adds, a thread filter keeps that thread's functions and shares,
 * the sort keys, an unnamed frame by its address, and a function keeps
 * its row across two profiles whose ids differ.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "attach/cli/toptab.h"
#include "model/profile.h"

static uint64_t loc(struct profile *p, uint64_t addr, const char *fn)
{
	struct profile_line l = { 0, 0 };
	uint64_t id;

	if (!fn)
		return profile_intern_location(p, 0, addr, NULL, 0);
	l.function_id = profile_intern_function(p, fn, fn, "", 0);
	id = profile_intern_location(p, 0, addr, &l, 1);
	assert_true(id != 0);
	return id;
}

/* A cpu-like profile: samples/count and cpu/nanoseconds. */
static struct profile *prof_new(void)
{
	struct profile *p = profile_new();

	assert_non_null(p);
	assert_int_equal(profile_add_sample_type(p, "samples", "count"), 0);
	assert_int_equal(profile_add_sample_type(p, "cpu", "nanoseconds"), 1);
	return p;
}

static void sample(struct profile *p, const uint64_t *locs, size_t n, int64_t v, int64_t tid,
		   const char *thread)
{
	struct profile_label_in l[2] = { { "tid", NULL, tid, NULL }, { "thread", thread, 0, NULL } };
	int64_t vals[2] = { 1, v };

	assert_int_equal(profile_add_sample(p, locs, n, vals, l, 2), 0);
}

static const struct toptab_fn *find(const struct toptab_fn *f, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

/* Thread 10: hot <- rec <- rec <- main (30); 20: cold <- main (10), an unnamed leaf (5). */
static struct profile *first(void)
{
	struct profile *p = prof_new();
	uint64_t a[4] = { loc(p, 0x10, "hot"), loc(p, 0x20, "rec"), loc(p, 0x21, "rec"),
			  loc(p, 0x30, "main") };
	uint64_t b[2] = { loc(p, 0x40, "cold"), a[3] };
	uint64_t c[2] = { loc(p, 0xdead, NULL), a[3] };

	sample(p, a, 4, 30, 10, "worker");
	sample(p, b, 2, 10, 20, "other");
	sample(p, c, 2, 5, 20, "other");
	return p;
}

static void test_fold(void **state)
{
	struct toptab *t = toptab_new();
	struct profile *p = first();
	struct toptab_fn f[16];
	const struct toptab_fn *e;
	int64_t sum[TOPTAB_SPANS];
	size_t n;

	(void)state;
	assert_non_null(t);
	assert_int_equal(toptab_fold(t, p, 1), 0);
	n = toptab_functions(t, TOPTAB_INTERVAL, 0, 0, f, 16, sum);
	assert_int_equal(sum[TOPTAB_INTERVAL], 45);
	assert_string_equal(f[0].name, "hot"); /* by self */
	assert_non_null(e = find(f, n, "rec"));
	assert_int_equal(e->self[TOPTAB_INTERVAL], 0);
	assert_int_equal(e->total[TOPTAB_INTERVAL], 30); /* once, though it recurses */
	assert_non_null(e = find(f, n, "main"));
	assert_int_equal(e->total[TOPTAB_INTERVAL], 45);
	assert_non_null(e = find(f, n, "0xdead"));
	assert_int_equal(e->self[TOPTAB_INTERVAL], 5);
	n = toptab_functions(t, TOPTAB_INTERVAL, 0, 1, f, 16, sum);
	assert_string_equal(f[0].name, "main"); /* by total */
	/* One thread: its functions, its value. */
	n = toptab_functions(t, TOPTAB_INTERVAL, 20, 0, f, 16, sum);
	assert_int_equal(sum[TOPTAB_INTERVAL], 15);
	assert_string_equal(f[0].name, "cold");
	assert_null(find(f, n, "hot"));
	assert_true(toptab_has_thread(t, 20));
	assert_false(toptab_has_thread(t, 30));
	profile_free(p);
	toptab_free(t);
}

static void test_spans(void **state)
{
	struct toptab *t = toptab_new();
	struct profile *p = first(), *q = prof_new();
	struct toptab_fn f[16];
	struct toptab_thread th[4];
	const struct toptab_fn *e;
	int64_t sum[TOPTAB_SPANS];
	size_t n;
	/* The second profile interns in another order: other ids, the same names. */
	uint64_t a[2] = { loc(q, 0x40, "cold"), loc(q, 0x30, "main") };

	(void)state;
	sample(q, a, 2, 50, 20, "other");
	assert_int_equal(toptab_fold(t, p, 1), 0);
	assert_int_equal(toptab_fold(t, q, 1), 0);
	n = toptab_functions(t, TOPTAB_INTERVAL, 0, 0, f, 16, sum);
	assert_int_equal(sum[TOPTAB_INTERVAL], 50);
	assert_int_equal(sum[TOPTAB_ALL], 95);
	assert_int_equal(n, 2); /* hot had nothing in the last interval */
	assert_string_equal(f[0].name, "cold");
	assert_int_equal(f[0].self[TOPTAB_ALL], 60);
	n = toptab_functions(t, TOPTAB_ALL, 0, 0, f, 16, sum);
	assert_non_null(e = find(f, n, "hot"));
	assert_int_equal(e->self[TOPTAB_ALL], 30);
	assert_int_equal(e->self[TOPTAB_INTERVAL], 0);
	n = toptab_threads(t, TOPTAB_INTERVAL, th, 4);
	assert_int_equal(n, 2);
	assert_int_equal(th[0].tid, 20);
	assert_string_equal(th[0].name, "other");
	assert_int_equal(th[0].value[TOPTAB_INTERVAL], 50);
	assert_int_equal(th[0].value[TOPTAB_ALL], 65);
	assert_int_equal(th[1].value[TOPTAB_INTERVAL], 0);
	/* max is kept. */
	assert_int_equal(toptab_functions(t, TOPTAB_ALL, 0, 0, f, 1, sum), 1);
	assert_int_equal(toptab_dropped(t), 0);
	profile_free(p);
	profile_free(q);
	toptab_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fold),
		cmocka_unit_test(test_spans),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
