/*
 * test_common.c — the shared helpers that model/, unwind/ and writer/
 * lean on: fnv_bytes() against FNV-1a's published vectors (the flame
 * graph's colours depend on the exact value), and array_grow()'s doubling,
 * its hard cap and a failure that changes nothing; buf_printf() into the
 * room left and past it, and at its limit; buf_hex() against printf's
 * "%0*" PRIx64; dynlib_load()'s
 * outcomes: a library found with every function, a missing library and
 * a missing function, each told once and kept; waitcost: the share of a
 * thread's CPU its waits stand for (never more than it used, nothing
 * without a measured cost) and the measurement itself (once, the same
 * value after, in a sane range); proc_stat_times() on a stat line whose
 * comm holds spaces and parentheses, and on lines cut short; likewise
 * proc_schedstat().
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/array.h"
#include "common/buf.h"
#include "common/dynlib.h"
#include "common/fnv.h"
#include "common/proc.h"
#include "common/sanitize.h"
#include "common/err.h"
#include "common/waitcost.h"

static void test_fnv_vectors(void **state)
{
	(void)state;
	assert_true(fnv_bytes(FNV_OFFSET, "", 0) == 0xcbf29ce484222325ull);
	assert_true(fnv_bytes(FNV_OFFSET, "a", 1) == 0xaf63dc4c8601ec8cull);
	assert_true(fnv_bytes(FNV_OFFSET, "foobar", 6) == 0x85944171f73967e8ull);
	/* In two pieces, the first result fed back in: the same value. */
	assert_true(fnv_bytes(fnv_bytes(FNV_OFFSET, "foo", 3), "bar", 3) ==
		    fnv_bytes(FNV_OFFSET, "foobar", 6));
}

static void test_array_doubles(void **state)
{
	size_t cap = 0, i, grows = 0, last = 0;
	int *v = NULL, *t;

	(void)state;
	for (i = 0; i < 1000; i++) {
		t = array_grow(v, &cap, i + 1, sizeof(*v), 1u << 20);
		assert_non_null(t);
		v = t;
		v[i] = (int)i;
		if (cap != last) {
			grows++;
			last = cap;
		}
	}
	assert_int_equal(cap, 1024); /* 16, 32, ... 1024 */
	assert_int_equal(grows, 7);
	for (i = 0; i < 1000; i++)
		assert_int_equal(v[i], (int)i);
	free(v);
}

static void test_array_cap(void **state)
{
	size_t cap = 0;
	int *v = NULL, *t;

	(void)state;
	/* Doubling stops at max, not at the next power of two. */
	v = array_grow(v, &cap, 20, sizeof(*v), 20);
	assert_non_null(v);
	assert_int_equal(cap, 20);
	v[19] = 19;
	/* Past max: NULL with EFBIG, the array and its capacity unchanged. */
	errno = 0;
	t = array_grow(v, &cap, 21, sizeof(*v), 20);
	assert_null(t);
	assert_int_equal(errno, EFBIG);
	assert_int_equal(cap, 20);
	assert_int_equal(v[19], 19);
	/* Enough room already: the same array, nothing allocated. */
	assert_ptr_equal(array_grow(v, &cap, 5, sizeof(*v), 20), v);
	/* A size times max that would overflow is refused before multiplying. */
	cap = 0;
	assert_null(array_grow(NULL, &cap, 1, SIZE_MAX / 2, 4));
	assert_int_equal(cap, 0);
	free(v);
}

static void test_buf_printf(void **state)
{
	struct buf b;
	char want[400];
	int i, n = 0;

	(void)state;
	/* Many appends, some within the room left, some past it (growth). */
	buf_init(&b, 1000);
	for (i = 0; i < 40; i++) {
		assert_int_equal(buf_printf(&b, "%d:%s;", i, i % 3 ? "ab" : "abcdefgh"), 0);
		n += snprintf(want + n, sizeof(want) - n, "%d:%s;", i, i % 3 ? "ab" : "abcdefgh");
	}
	assert_int_equal(b.len, (size_t)n);
	assert_string_equal((char *)b.data, want);
	buf_release(&b);

	/* At the limit: up to it exactly, then a failure that appends nothing. */
	buf_init(&b, 10);
	assert_int_equal(buf_printf(&b, "%s", "12345"), 0);
	assert_int_equal(buf_printf(&b, "%s", "abcdefg"), -1);
	assert_int_equal(errno, EFBIG);
	assert_int_equal(b.len, 5);
	assert_string_equal((char *)b.data, "12345");
	assert_int_equal(buf_printf(&b, "%s", "67890"), 0);
	assert_string_equal((char *)b.data, "1234567890");
	assert_int_equal(buf_printf(&b, "x"), -1);
	assert_string_equal((char *)b.data, "1234567890");
	buf_release(&b);
}

static void test_buf_hex(void **state)
{
	static const uint64_t v[] = { 0, 1, 0xf, 0x10, 0x7f0e76b78990ull, UINT64_MAX };
	static const unsigned w[] = { 0, 1, 3, 16, 20 };
	char want[64];
	struct buf b;
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		for (j = 0; j < sizeof(w) / sizeof(w[0]); j++) {
			buf_init(&b, 64);
			assert_int_equal(buf_hex(&b, v[i], w[j]), 0);
			/* Never wider than 16 digits: a uint64_t has no more. */
			snprintf(want, sizeof(want), "%0*" PRIx64, w[j] > 16 ? 16 : (int)w[j], v[i]);
			assert_string_equal((char *)b.data, want);
			buf_release(&b);
		}
	buf_init(&b, 3);
	assert_int_equal(buf_puts(&b, "ab"), 0);
	assert_int_equal(buf_hex(&b, 0x123, 0), -1);
	assert_string_equal((char *)b.data, "ab");
	buf_release(&b);
}

/* libz is linked into every cprof binary: a library that is surely there. */
static void test_dynlib_found(void **state)
{
	const char *(*version)(void) = NULL;
	void *slot = NULL;
	const struct dynlib_sym syms[] = { { "zlibVersion", &slot } };
	struct dynlib l = { .soname = "libz.so.1", .syms = syms, .nsyms = 1 };

	(void)state;
	assert_int_equal(dynlib_load(&l), 0);
	assert_non_null(slot);
	*(void **)&version = slot;
	assert_true(version()[0] == '1');
	/* Again: the kept outcome, the slot as it was. */
	slot = NULL;
	assert_int_equal(dynlib_load(&l), 0);
	assert_null(slot);
}

static void test_dynlib_missing(void **state)
{
	void *a = NULL, *b = NULL;
	const struct dynlib_sym none[] = { { "nothing_here", &a } };
	const struct dynlib_sym some[] = { { "zlibVersion", &a }, { "cprof_no_such_fn", &b } };
	struct dynlib gone = { .soname = "libcprof-no-such.so.9", .syms = none, .nsyms = 1 };
	struct dynlib lacks = { .soname = "libz.so.1", .syms = some, .nsyms = 2 };

	(void)state;
	assert_int_equal(dynlib_load(&gone), -1);
	assert_non_null(strstr(gone.why, "libcprof-no-such.so.9"));
	assert_null(a);
	/* Told once: the second call fails the same way without trying. */
	gone.why[0] = 0;
	assert_int_equal(dynlib_load(&gone), -1);
	assert_int_equal(gone.why[0], 0);
	assert_int_equal(dynlib_load(&lacks), -1);
	assert_string_equal(lacks.why, "libz.so.1 lacks cprof_no_such_fn");
}

static void test_waitcost_of(void **state)
{
	(void)state;
	assert_int_equal(waitcost_of(10, 5000, 1000000), 50000);
	assert_int_equal(waitcost_of(10, 5000, 30000), 30000);  /* at most what it used */
	assert_int_equal(waitcost_of(0, 5000, 30000), 0);
	assert_int_equal(waitcost_of(10, 0, 30000), 0);         /* not measured: no estimate */
	assert_int_equal(waitcost_of(UINT64_MAX / 2, 5000, 7), 7); /* no overflow */
	assert_int_equal(waitcost_of(6, 5000, 30000), 30000);   /* exactly all of it */
}

static void test_waitcost_measured(void **state)
{
	uint64_t c, r = 0, rt = 0;
	int i;

	(void)state;
	/* Started on a thread of its own, ready without a call that waits (within its deadlines). */
	waitcost_start();
	for (i = 0; i < 10000 && !waitcost_ready(&r, &rt); i++)
		usleep(1000);
	assert_true(waitcost_ready(&r, &rt));
	c = waitcost_ns();
	assert_int_equal(r, c);
	assert_int_equal(rt, waitcost_timer_ns());
	assert_true(rt >= c);
	/* A wait costs a thread some CPU, and never the 50 us cap's worth of a sane host. */
	assert_true(c > 0);
	assert_true(c <= 50000);
	assert_int_equal(waitcost_ns(), c);
}

static void test_proc_stat_times(void **state)
{
	const char *line = "1234 (a) b (c)) R 1 1234 1234 0 -1 4194304 100 0 0 0 "
			   "250 17 0 0 20 0 3 0 5000 1000 10 18446744073709551615\n";
	uint64_t ut = 1, st = 1;

	(void)state;
	assert_int_equal(proc_stat_times(line, &ut, &st), 0);
	assert_int_equal(ut, 250);
	assert_int_equal(st, 17);
	assert_int_equal(proc_stat_times("1 (x) S 1 1 1 0 -1 0 0 0 0 0 7 9", &ut, &st), 0);
	assert_int_equal(ut, 7);
	assert_int_equal(st, 9);
	assert_int_equal(proc_stat_times("1 (x) S 1 1 1 0 -1 0 0 0 0 0 7", &ut, &st), -1);
	assert_int_equal(proc_stat_times("1 (x) S 1 1 1 0 -1 0 0 0 0 0 7 ", &ut, &st), -1);
	assert_int_equal(proc_stat_times("1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 9", &ut, &st), -1);
	assert_int_equal(proc_stat_times("1 x S 1 1 1 0 -1 0 0 0 0 0 7 9", &ut, &st), -1);
	assert_int_equal(proc_stat_times("", &ut, &st), -1);
}

static void test_proc_schedstat(void **state)
{
	uint64_t cpu = 1, n = 1, q = 1;

	(void)state;
	assert_int_equal(proc_schedstat("123456 789 42\n", &cpu, &q, &n), 0);
	assert_int_equal(cpu, 123456);
	assert_int_equal(q, 789);
	assert_int_equal(n, 42);
	assert_int_equal(proc_schedstat("99", &cpu, NULL, &n), 0); /* cut short: no slices */
	assert_int_equal(cpu, 99);
	assert_int_equal(n, 0);
	assert_int_equal(proc_schedstat("x 1 2", &cpu, &q, &n), -1);
	assert_int_equal(proc_schedstat("", &cpu, &q, &n), -1);
}

/* A task's syscall line, as the kernel writes it, and what a hostile or torn one gives. */
static void test_proc_syscall(void **state)
{
	uint64_t sp = 0, pc = 0;
	long nr = 0;

	(void)state;
	assert_int_equal(proc_syscall("0 0x3 0x7ffc 0x10 0x0 0x0 0x0 0x7ffd1000 0x7f00aa\n", &nr, &sp,
				      &pc), 0);
	assert_int_equal(nr, 0);
	assert_int_equal(sp, 0x7ffd1000);
	assert_int_equal(pc, 0x7f00aa);
	assert_int_equal(proc_syscall("-1 0x7ffd2000 0x401000\n", &nr, &sp, &pc), 0);
	assert_int_equal(nr, -1);
	assert_int_equal(sp, 0x7ffd2000);
	assert_int_equal(proc_syscall("running\n", &nr, &sp, &pc), 1);
	assert_int_equal(proc_syscall("", &nr, &sp, &pc), -1);
	assert_int_equal(proc_syscall("x 1 2", &nr, &sp, &pc), -1);
	assert_int_equal(proc_syscall("0 0x1 0x2", &nr, &sp, &pc), -1); /* cut short */
	assert_int_equal(proc_syscall("-1 0x1", &nr, &sp, &pc), -1);
	assert_int_equal(proc_syscall("99999999999999999999999 0x1 0x2", &nr, &sp, &pc), -1);
}

/* Control bytes escaped, everything else (UTF-8 too) copied; never half an escape. */
static void test_sanitize(void **state)
{
	char out[64];
	struct buf b;
	int fds[2], saved;
	ssize_t n;

	(void)state;
	assert_int_equal(sanitize_str(out, sizeof(out), "plain caf\303\251 \342\202\254"), 15);
	assert_string_equal(out, "plain caf\303\251 \342\202\254");
	sanitize_str(out, sizeof(out), "a\033[31mb\tc\nd\177e\302\233f\302\240g");
	assert_string_equal(out, "a\\x1b[31mb\\x09c\\x0ad\\x7fe\\xc2\\x9bf\302\240g");
	/* Cut where an escape does not fit whole. */
	assert_int_equal(sanitize_str(out, 6, "ab\033cd"), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(sanitize_str(out, 1, "ab"), 0);
	assert_string_equal(out, "");
	buf_init(&b, 1 << 10);
	assert_int_equal(sanitize_buf(&b, "x\033y"), 0);
	assert_int_equal(sanitize_buf(&b, ""), 0);
	assert_int_equal(sanitize_buf(&b, "\007"), 0);
	assert_string_equal((char *)b.data, "x\\x1by\\x07");
	buf_release(&b);
	buf_init(&b, 5);
	assert_int_equal(sanitize_buf(&b, "ab\033"), -1); /* the limit, never overrun */
	assert_true(b.len <= 5);
	buf_release(&b);
	/* err.c's lines: one line, the control bytes of what they name escaped. */
	assert_int_equal(pipe(fds), 0);
	saved = dup(2);
	dup2(fds[1], 2);
	err_set_prog("cprof-test");
	error("cannot open \"%s\"", "/tmp/\033[2J\nfake line");
	dup2(saved, 2);
	close(saved);
	close(fds[1]);
	n = read(fds[0], out, sizeof(out) - 1);
	close(fds[0]);
	assert_true(n > 0);
	out[n] = 0;
	assert_string_equal(out, "cprof-test: cannot open \"/tmp/\\x1b[2J\\x0afake line\"\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv_vectors),
		cmocka_unit_test(test_array_doubles),
		cmocka_unit_test(test_array_cap),
		cmocka_unit_test(test_buf_printf),
		cmocka_unit_test(test_buf_hex),
		cmocka_unit_test(test_dynlib_found),
		cmocka_unit_test(test_dynlib_missing),
		cmocka_unit_test(test_waitcost_of),
		cmocka_unit_test(test_waitcost_measured),
		cmocka_unit_test(test_proc_stat_times),
		cmocka_unit_test(test_proc_schedstat),
		cmocka_unit_test(test_proc_syscall),
		cmocka_unit_test(test_sanitize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
