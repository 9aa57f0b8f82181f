/*
 * test_text.c — the text writers against hand-built profiles: Go's debug=1
 * count form (ordering, return addresses on the "@" line, call sites and
 * offsets on the "#" lines, sorted quoted labels, unknown functions) and
 * the thread dump (one block per thread by tid, state and syscall, the
 * program's own labels, frames with object names, inlined lines, an empty
 * stack).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "model/profile.h"
#include "writer/text.h"
#include "writer/top.h"

struct fixture {
	struct profile *p;
	uint64_t leaf, mid, root, anon, inl;
};

static uint64_t loc(struct profile *p, uint64_t m, uint64_t addr, const char *fn, int64_t off)
{
	struct profile_line l = { profile_intern_function(p, fn, fn, "", 0), 0 };
	uint64_t id = profile_intern_location(p, m, addr, &l, 1);

	assert_true(id != 0);
	if (off >= 0)
		assert_int_equal(profile_location_set_offset(p, id, off), 0);
	return id;
}

static int setup(void **state)
{
	static struct fixture f;
	struct profile_mapping_in m = { .start = 0x1000, .limit = 0x9000, .offset = 0,
					.filename = "/usr/bin/server", .has_functions = 1 };
	struct profile_line two[2];
	uint64_t mid;

	f.p = profile_new();
	assert_non_null(f.p);
	assert_int_equal(profile_add_sample_type(f.p, "threads", "count"), 0);
	mid = profile_add_mapping(f.p, &m);
	f.leaf = loc(f.p, mid, 0x1016, "epoll_wait", 0x16);
	f.mid = loc(f.p, mid, 0x2041, "event_loop", 0x41);
	f.root = loc(f.p, mid, 0x3008, "main", 0x8);
	f.anon = profile_intern_location(f.p, 0, 0xdead, NULL, 0);
	two[0].function_id = profile_intern_function(f.p, "inner", "inner", "/src/util.h", 5);
	two[0].line = 7;
	two[1].function_id = profile_intern_function(f.p, "outer", "outer", "/src/server.c", 30);
	two[1].line = 40;
	f.inl = profile_intern_location(f.p, mid, 0x4000, two, 2);
	profile_location_set_offset(f.p, f.inl, 0x20);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	profile_free(f->p);
	return 0;
}

static void add(struct profile *p, const uint64_t *ids, size_t n, int64_t v, const char *thread,
		int64_t tid, const char *st, const char *sc)
{
	struct profile_label_in l[4];
	size_t k = 0;

	memset(l, 0, sizeof(l));
	if (sc) {
		l[k].key = "syscall";
		l[k++].str = sc;
	}
	if (thread) {
		l[k].key = "thread";
		l[k++].str = thread;
	}
	if (tid) {
		l[k].key = "tid";
		l[k++].num = tid;
	}
	if (st) {
		l[k].key = "state";
		l[k++].str = st;
	}
	assert_int_equal(profile_add_sample(p, ids, n, &v, l, k), 0);
}

static void test_count_form(void **state)
{
	struct fixture *f = *state;
	uint64_t a[] = { f->leaf, f->mid, f->root };
	uint64_t b[] = { f->anon, f->root };
	struct buf out;

	add(f->p, b, 2, 1, NULL, 0, NULL, NULL);
	add(f->p, a, 3, 5, "poll\"er", 0, "sleeping", "epoll_wait");
	buf_init(&out, 1 << 20);
	assert_int_equal(text_write_count(f->p, "threads", &out), 0);
	assert_string_equal((char *)out.data,
			    "threads profile: total 6\n"
			    "5 @ 0x1016 0x2042 0x3009\n"
			    "# labels: {\"state\":\"sleeping\", \"syscall\":\"epoll_wait\", "
			    "\"thread\":\"poll\\\"er\"}\n"
			    "#\t0x1016\tepoll_wait+0x16\n"
			    "#\t0x2041\tevent_loop+0x41\n"
			    "#\t0x3008\tmain+0x8\n"
			    "\n"
			    "1 @ 0xdead 0x3009\n"
			    "#\t0xdead\n"
			    "#\t0x3008\tmain+0x8\n"
			    "\n");
	buf_release(&out);
}

static void test_count_empty(void **state)
{
	struct fixture *f = *state;
	struct buf out;

	buf_init(&out, 1 << 20);
	assert_int_equal(text_write_count(f->p, "threads", &out), 0);
	assert_string_equal((char *)out.data, "threads profile: total 0\n");
	buf_release(&out);
}

static void test_count_limit(void **state)
{
	struct fixture *f = *state;
	uint64_t a[] = { f->leaf, f->mid, f->root };
	struct buf out;

	add(f->p, a, 3, 5, "t", 0, NULL, NULL);
	buf_init(&out, 40); /* too small: fails, never overruns */
	assert_int_equal(text_write_count(f->p, "threads", &out), -1);
	assert_true(out.len <= 40);
	buf_release(&out);
}

static void test_dump(void **state)
{
	struct fixture *f = *state;
	uint64_t a[] = { f->leaf, f->mid, f->root };
	uint64_t c[] = { f->inl, f->root };
	uint64_t d[] = { f->anon, f->root };
	struct buf out;

	add(f->p, c, 2, 1, "worker", 12, "running", NULL);
	add(f->p, d, 2, 1, "jit", 13, "running", NULL);
	add(f->p, a, 3, 1, "server", 10, "sleeping", "epoll_wait");
	add(f->p, NULL, 0, 1, "ghost", 11, "zombie", NULL);
	buf_init(&out, 1 << 20);
	assert_int_equal(text_write_dump(f->p, "Threads of 10 (server)", &out), 0);
	assert_string_equal((char *)out.data,
			    "Threads of 10 (server)\n"
			    "\n"
			    "thread 10 \"server\" sleeping in epoll_wait\n"
			    "    #0   0x0000000000001016 epoll_wait+0x16 (server)\n"
			    "    #1   0x0000000000002041 event_loop+0x41 (server)\n"
			    "    #2   0x0000000000003008 main+0x8 (server)\n"
			    "\n"
			    "thread 11 \"ghost\" zombie\n"
			    "    (no stack)\n"
			    "\n"
			    "thread 12 \"worker\" running\n"
			    "    #0   0x0000000000004000 inner (inlined) at util.h:7 (server)\n"
			    "    #1   0x0000000000004000 outer+0x20 at server.c:40 (server)\n"
			    "    #2   0x0000000000003008 main+0x8 (server)\n"
			    "\n"
			    "thread 13 \"jit\" running\n"
			    "    #0   0x000000000000dead [anonymous code]\n"
			    "    #1   0x0000000000003008 main+0x8 (server)\n");
	buf_release(&out);
}

/* The program's own labels (cprof.h) print under the thread's line, cprof's own do not. */
static void test_dump_labels(void **state)
{
	struct fixture *f = *state;
	uint64_t a[] = { f->leaf, f->root };
	struct profile_label_in l[5];
	int64_t v = 1;
	struct buf out;

	memset(l, 0, sizeof(l));
	l[0].key = "thread";
	l[0].str = "worker";
	l[1].key = "tid";
	l[1].num = 12;
	l[2].key = "state";
	l[2].str = "running";
	l[3].key = "endpoint";
	l[3].str = "/search";
	l[4].key = "tenant";
	l[4].str = "a";
	assert_int_equal(profile_add_sample(f->p, a, 2, &v, l, 5), 0);
	add(f->p, a, 2, 1, "idle", 13, "sleeping", NULL);
	buf_init(&out, 1 << 20);
	assert_int_equal(text_write_dump(f->p, "T", &out), 0);
	assert_string_equal((char *)out.data,
			    "T\n"
			    "\n"
			    "thread 12 \"worker\" running\n"
			    "    labels: endpoint=/search tenant=a\n"
			    "    #0   0x0000000000001016 epoll_wait+0x16 (server)\n"
			    "    #1   0x0000000000003008 main+0x8 (server)\n"
			    "\n"
			    "thread 13 \"idle\" sleeping\n"
			    "    #0   0x0000000000001016 epoll_wait+0x16 (server)\n"
			    "    #1   0x0000000000003008 main+0x8 (server)\n");
	buf_release(&out);
}

/*
 * A target's names with control bytes (thread name, function, file, label
 * value, the title's comm) are printed escaped in the dump, the count form
 * and the top table: no ESC, no newline of theirs.
 */
static void test_escaped_names(void **state)
{
	struct fixture *f = *state;
	struct profile_mapping_in m = { .start = 0x10000, .limit = 0x20000, .offset = 0,
					.filename = "/tmp/lib\033]0;x\007.so", .has_functions = 1 };
	struct profile_line l = { 0, 9 };
	struct profile_label_in lb[4];
	uint64_t mid, ids[2];
	int64_t v = 1;
	struct buf out;

	mid = profile_add_mapping(f->p, &m);
	l.function_id = profile_intern_function(f->p, "evil\033[31mfn", "evil\033[31mfn",
						"/src/e\033[2Jvil.c", 1);
	ids[0] = profile_intern_location(f->p, mid, 0x10010, &l, 1);
	ids[1] = f->root;
	memset(lb, 0, sizeof(lb));
	lb[0].key = "thread";
	lb[0].str = "\033]0;pwned\007";
	lb[1].key = "tid";
	lb[1].num = 7;
	lb[2].key = "state";
	lb[2].str = "running\nthread 1 \"fake\"";
	lb[3].key = "endpoint";
	lb[3].str = "\302\233" "2J"; /* C1 CSI as UTF-8 */
	assert_int_equal(profile_add_sample(f->p, ids, 2, &v, lb, 4), 0);
	buf_init(&out, 1 << 20);
	assert_int_equal(text_write_dump(f->p, "Threads of 7 (\033[2J)", &out), 0);
	assert_string_equal((char *)out.data,
			    "Threads of 7 (\\x1b[2J)\n"
			    "\n"
			    "thread 7 \"\\x1b]0;pwned\\x07\" running\\x0athread 1 \"fake\"\n"
			    "    labels: endpoint=\\xc2\\x9b2J\n"
			    "    #0   0x0000000000010010 evil\\x1b[31mfn at e\\x1b[2Jvil.c:9 "
			    "(lib\\x1b]0;x\\x07.so)\n"
			    "    #1   0x0000000000003008 main+0x8 (server)\n");
	buf_release(&out);
	buf_init(&out, 1 << 20);
	assert_int_equal(text_write_count(f->p, "threads", &out), 0);
	assert_null(memchr(out.data, 0x1b, out.len));
	assert_non_null(strstr((char *)out.data, "#\t0x10010\tevil\\x1b[31mfn\t/src/e\\x1b[2Jvil.c:9\n"));
	buf_release(&out);
	buf_init(&out, 1 << 20);
	assert_int_equal(top_write(f->p, 0, 10, &out), 0);
	assert_null(memchr(out.data, 0x1b, out.len));
	assert_non_null(strstr((char *)out.data, "  evil\\x1b[31mfn\n"));
	buf_release(&out);
}

/* The top table leaves out nothing that holds samples: an address without a name too. */
static void test_top_unnamed(void **state)
{
	struct fixture *f = *state;
	uint64_t a[] = { f->anon, f->root }, b[] = { f->leaf, f->root };
	struct buf out;

	add(f->p, a, 2, 3, "jit", 13, NULL, NULL);
	add(f->p, b, 2, 1, "server", 10, NULL, NULL);
	buf_init(&out, 1 << 20);
	assert_int_equal(top_write(f->p, 0, 10, &out), 0);
	assert_non_null(strstr((char *)out.data, " 75.00%  0xdead\n"));
	assert_non_null(strstr((char *)out.data, " 25.00%  epoll_wait\n"));
	assert_non_null(strstr((char *)out.data, "100.00%  main\n"));
	buf_release(&out);
}

/* Go's legacy heap form: totals header with heap/2*rate, records by in-use bytes. */
static void test_heap_form(void **state)
{
	struct fixture *f = *state;
	struct profile *p = profile_new();
	struct profile_mapping_in m = { .start = 0x1000, .limit = 0x9000, .filename = "/bin/x",
					.has_functions = 1 };
	uint64_t mid, a[2], b[1];
	int64_t v1[4] = { 10, 40960, 4, 16384 }, v2[4] = { 3, 3000000, 3, 3000000 };
	struct buf out;

	(void)f;
	assert_int_equal(profile_add_sample_type(p, "alloc_objects", "count"), 0);
	assert_int_equal(profile_add_sample_type(p, "alloc_space", "bytes"), 1);
	assert_int_equal(profile_add_sample_type(p, "inuse_objects", "count"), 2);
	assert_int_equal(profile_add_sample_type(p, "inuse_space", "bytes"), 3);
	mid = profile_add_mapping(p, &m);
	a[0] = loc(p, mid, 0x1100, "small", 0x10);
	a[1] = loc(p, mid, 0x1200, "main", 0x20);
	b[0] = loc(p, mid, 0x1300, "big", 0x30);
	assert_int_equal(profile_add_sample(p, a, 2, v1, NULL, 0), 0);
	assert_int_equal(profile_add_sample(p, b, 1, v2, NULL, 0), 0);
	buf_init(&out, 1 << 20);
	assert_int_equal(text_write_heap(p, 524288, &out), 0);
	assert_string_equal((char *)out.data,
			    "heap profile: 7: 3016384 [13: 3040960] @ heap/1048576\n"
			    "3: 3000000 [3: 3000000] @ 0x1300\n"
			    "#\t0x1300\tbig+0x30\n"
			    "\n"
			    "4: 16384 [10: 40960] @ 0x1100 0x1201\n"
			    "#\t0x1100\tsmall+0x10\n"
			    "#\t0x1200\tmain+0x20\n"
			    "\n");
	buf_release(&out);
	profile_free(p);
}

/* The top view shows C++ names without their parameter lists; others as they are. */
static void test_top_short_names(void **state)
{
	static const char *const cases[][2] = {
		{ "main", "main" },
		{ "ns::f(int, char const*)", "ns::f" },
		{ "ns::C::get() const", "ns::C::get" },
		{ "ns::C::move() &&", "ns::C::move" },
		{ "Foo::operator()(int)", "Foo::operator()" },
		{ "std::function<void (int)>::operator()(int) const", "std::function<void (int)>::operator()" },
		{ "(anonymous namespace)::worker(void*)", "(anonymous namespace)::worker" },
		{ "f(int", "f(int" },                 /* unbalanced: whole */
		{ "(int)", "(int)" },                 /* all parameter list: whole */
		{ "[partial: no unwind info]", "[partial: no unwind info]" },
	};
	char out[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(top_short_name(cases[i][0], out, sizeof(out)), cases[i][1]);
	/* Longer than the room given: whole. */
	assert_string_equal(top_short_name("averyveryverylongname(int)", out, 8), "averyveryverylongname(int)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_count_form, setup, teardown),
		cmocka_unit_test_setup_teardown(test_count_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_count_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dump, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dump_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escaped_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heap_form, setup, teardown),
		cmocka_unit_test_setup_teardown(test_top_unnamed, setup, teardown),
		cmocka_unit_test(test_top_short_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
