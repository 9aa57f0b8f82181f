/*
 * test_maps.c — unit tests for unwind/maps: real /proc/PID/maps lines,
 * malformed and hostile text (each skipped and counted, never read past),
 * the sortedness invariant, maps_find() at every boundary, and maps_read()
 * on this very process. Inputs are built with explicit lengths so that a
 * parser reading one byte too far shows up under ASan/valgrind.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/maps.h"

static const char real_text[] =
	"55d4c0a00000-55d4c0a02000 r--p 00000000 08:01 1234567                    /usr/bin/cat\n"
	"55d4c0a02000-55d4c0a06000 r-xp 00002000 08:01 1234567                    /usr/bin/cat\n"
	"55d4c1a00000-55d4c1a21000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0 \n"
	"7f1c2a021000-7f1c2a022000 ---p 00000000 00:00 0\n"
	"7f1c2b000000-7f1c2b001000 r-xp 0001a000 fd:1f 42                         /home/u/my lib/libx.so (deleted)\n"
	"7f1c2c000000-7f1c2c001000 rw-s 00000000 00:05 99                         /dev/shm/a  b (deleted) c\n"
	"7ffc8a000000-7ffc8a021000 rw-p 00000000 00:00 0                          [stack]\n"
	"7ffc8a1fe000-7ffc8a200000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static void test_real_lines(void **state)
{
	struct maps m;
	const struct map_entry *e;

	(void)state;
	maps_init(&m);
	assert_int_equal(maps_parse(&m, real_text, strlen(real_text)), 0);
	assert_int_equal(m.skipped, 0);
	assert_int_equal(m.n, 10);

	e = &m.v[0];
	assert_int_equal(e->start, 0x55d4c0a00000ull);
	assert_int_equal(e->end, 0x55d4c0a02000ull);
	assert_int_equal(e->perms, MAP_R | MAP_P);
	assert_int_equal(e->offset, 0);
	assert_int_equal(e->dev_major, 8);
	assert_int_equal(e->dev_minor, 1);
	assert_int_equal(e->inode, 1234567);
	assert_string_equal(e->path, "/usr/bin/cat");
	assert_int_equal(e->deleted, 0);

	assert_int_equal(m.v[1].perms, MAP_R | MAP_X | MAP_P);
	assert_int_equal(m.v[1].offset, 0x2000);
	assert_string_equal(m.v[1].path, "/usr/bin/cat");
	assert_string_equal(m.v[2].path, "[heap]");
	assert_int_equal(m.v[2].perms, MAP_R | MAP_W | MAP_P);

	/* Anonymous, with and without the trailing space older kernels print. */
	assert_string_equal(m.v[3].path, "");
	assert_int_equal(m.v[3].inode, 0);
	assert_string_equal(m.v[4].path, "");
	assert_int_equal(m.v[4].perms, MAP_P);

	e = &m.v[5];
	assert_string_equal(e->path, "/home/u/my lib/libx.so");
	assert_int_equal(e->deleted, 1);
	assert_int_equal(e->offset, 0x1a000);
	assert_int_equal(e->dev_major, 0xfd);
	assert_int_equal(e->dev_minor, 0x1f);
	assert_int_equal(e->inode, 42);

	/* Shared, inner spaces kept, " (deleted)" only stripped at the end. */
	e = &m.v[6];
	assert_int_equal(e->perms, MAP_R | MAP_W);
	assert_string_equal(e->path, "/dev/shm/a  b (deleted) c");
	assert_int_equal(e->deleted, 0);

	assert_string_equal(m.v[7].path, "[stack]");
	assert_string_equal(m.v[8].path, "[vdso]");
	e = &m.v[9];
	assert_int_equal(e->start, 0xffffffffff600000ull);
	assert_int_equal(e->end, 0xffffffffff601000ull);
	assert_int_equal(e->perms, MAP_X | MAP_P);
	assert_string_equal(e->path, "[vsyscall]");

	maps_release(&m);
	assert_int_equal(m.n, 0);
	assert_null(m.v);
	maps_release(&m); /* twice is fine */
}

static void test_find(void **state)
{
	struct maps m;
	const struct map_entry *e;

	(void)state;
	maps_init(&m);
	assert_null(maps_find(&m, 0x1000)); /* empty */
	assert_int_equal(maps_parse(&m, real_text, strlen(real_text)), 0);

	assert_null(maps_find(&m, 0));
	assert_null(maps_find(&m, 0x55d4c0a00000ull - 1));
	e = maps_find(&m, 0x55d4c0a00000ull);
	assert_ptr_equal(e, &m.v[0]);
	assert_ptr_equal(maps_find(&m, 0x55d4c0a01fffull), &m.v[0]);
	/* Adjacent entries: end of one is the start of the next. */
	assert_ptr_equal(maps_find(&m, 0x55d4c0a02000ull), &m.v[1]);
	assert_ptr_equal(maps_find(&m, 0x55d4c0a05fffull), &m.v[1]);
	/* Gap after an entry. */
	assert_null(maps_find(&m, 0x55d4c0a06000ull));
	assert_null(maps_find(&m, 0x55d4c19fffffull));
	assert_ptr_equal(maps_find(&m, 0x55d4c1a00000ull), &m.v[2]);
	assert_ptr_equal(maps_find(&m, 0x7ffc8a1ff000ull), &m.v[8]);
	assert_ptr_equal(maps_find(&m, 0xffffffffff600fffull), &m.v[9]);
	assert_null(maps_find(&m, 0xffffffffff601000ull));
	assert_null(maps_find(&m, UINT64_MAX));
	maps_release(&m);
}

/* Parse text of exactly len bytes from a malloc'd copy (so ASan sees overruns). */
static int parse_exact(struct maps *m, const char *text, size_t len)
{
	char *copy = malloc(len ? len : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, text, len);
	r = maps_parse(m, copy, len);
	free(copy);
	return r;
}

static void test_malformed(void **state)
{
	static const char text[] =
		"1000-2000 r-xp 00000000 08:01 5 /a\n"
		"3000-4000 r-xp 00000000 08:01\n"                   /* no inode */
		"3000-4000 r-xp 00000000\n"                         /* no device */
		"3000-4000\n"                                       /* no perms */
		"3000 r-xp 00000000 08:01 5 /b\n"                   /* no end */
		"30g0-4000 r-xp 00000000 08:01 5 /b\n"              /* bad hex */
		"3000-4000 r-xq 00000000 08:01 5 /b\n"              /* bad perms */
		"3000-4000 rwx 00000000 08:01 5 /b\n"               /* short perms */
		"3000-4000 r-xp 0000zz00 08:01 5 /b\n"              /* bad offset */
		"3000-4000 r-xp 00000000 0801 5 /b\n"               /* bad device */
		"3000-4000 r-xp 00000000 100000000:01 5 /b\n"       /* major too big */
		"3000-4000 r-xp 00000000 08:01 5x /b\n"             /* junk on inode */
		"3000-4000 r-xp 00000000 08:01 99999999999999999999 /b\n" /* inode overflow */
		"10000000000000000-10000000000000001 r-xp 0 08:01 5 /b\n" /* 17 hex digits */
		"4000-3000 r-xp 00000000 08:01 5 /b\n"              /* start > end */
		"3000-3000 r-xp 00000000 08:01 5 /b\n"              /* empty */
		"-4000 r-xp 00000000 08:01 5 /b\n"
		"\n"
		"garbage\n"
		"5000-6000 r--p 00000000 08:01 6 /c\n";
	struct maps m;

	(void)state;
	maps_init(&m);
	assert_int_equal(parse_exact(&m, text, strlen(text)), 0);
	assert_int_equal(m.n, 2);
	assert_int_equal(m.skipped, 18);
	assert_string_equal(m.v[0].path, "/a");
	assert_int_equal(m.v[0].start, 0x1000);
	assert_string_equal(m.v[1].path, "/c");
	assert_int_equal(m.v[1].start, 0x5000);
	maps_release(&m);
}

static void test_truncated_and_nul(void **state)
{
	static const char good[] = "1000-2000 r-xp 00000000 08:01 5 /lib/a.so\n";
	static const char next[] = "3000-4000 r-xp 00000000 08:01 5 /lib/b.so\n";
	static const char nul_line[] = "3000-4000 r-xp 00000000 08:01 5 /lib/b\0c.so\n"
				       "5000-6000 r-xp 00000000 08:01 5 /lib/d.so\n";
	char buf[256];
	struct maps m;
	size_t len, cut;

	(void)state;
	maps_init(&m);

	/* A final line without its newline may have lost part of its path. */
	len = strlen(good);
	memcpy(buf, good, len);
	memcpy(buf + len, next, strlen(next));
	for (cut = len; cut < len + strlen(next); cut++) {
		assert_int_equal(parse_exact(&m, buf, cut), 0);
		assert_int_equal(m.n, 1);
		assert_int_equal(m.skipped, cut > len ? 1 : 0);
		assert_string_equal(m.v[0].path, "/lib/a.so");
	}
	/* Every prefix of the first line: nothing kept, nothing read past. */
	for (cut = 0; cut < len; cut++) {
		assert_int_equal(parse_exact(&m, good, cut), 0);
		assert_int_equal(m.n, 0);
		assert_int_equal(m.skipped, cut ? 1 : 0);
	}

	/* A NUL inside a line makes the line malformed, not a short path. */
	assert_int_equal(parse_exact(&m, nul_line, sizeof(nul_line) - 1), 0);
	assert_int_equal(m.n, 1);
	assert_int_equal(m.skipped, 1);
	assert_string_equal(m.v[0].path, "/lib/d.so");
	maps_release(&m);
}

static void test_path_limit(void **state)
{
	const char *head = "1000-2000 r-xp 00000000 08:01 5 /";
	size_t hl = strlen(head), plen;
	char *text = malloc(hl + MAPS_MAX_PATH + 64);
	struct maps m;

	(void)state;
	assert_non_null(text);
	maps_init(&m);
	/* Longest path kept: MAPS_MAX_PATH - 1 bytes (room for its NUL). */
	for (plen = MAPS_MAX_PATH - 1; plen <= MAPS_MAX_PATH; plen++) {
		memcpy(text, head, hl);
		memset(text + hl, 'x', plen - 1);
		text[hl + plen - 1] = '\n';
		assert_int_equal(parse_exact(&m, text, hl + plen), 0);
		if (plen < MAPS_MAX_PATH) {
			assert_int_equal(m.n, 1);
			assert_int_equal(strlen(m.v[0].path), plen);
			assert_int_equal(m.v[0].path[0], '/');
		} else {
			assert_int_equal(m.n, 0);
			assert_int_equal(m.skipped, 1);
		}
	}
	/* An overlong path that becomes short enough without " (deleted)". */
	plen = MAPS_MAX_PATH - 1;
	memcpy(text, head, hl);
	memset(text + hl, 'y', plen - 1);
	memcpy(text + hl + plen - 1, " (deleted)\n", 11);
	assert_int_equal(parse_exact(&m, text, hl + plen + 10), 0);
	assert_int_equal(m.n, 1);
	assert_int_equal(m.v[0].deleted, 1);
	assert_int_equal(strlen(m.v[0].path), plen);
	maps_release(&m);
	free(text);
}

static void test_overlap_and_order(void **state)
{
	static const char text[] =
		"1000-3000 r--p 00000000 08:01 5 /a\n"
		"2000-4000 r--p 00000000 08:01 5 /overlaps\n"
		"0500-0800 r--p 00000000 08:01 5 /before\n"
		"2fff-3001 r--p 00000000 08:01 5 /overlaps-by-one\n"
		"3000-5000 r--p 00000000 08:01 5 /b\n"
		"3000-5000 r--p 00000000 08:01 5 /duplicate\n"
		"9000-a000 r--p 00000000 08:01 5 /c\n";
	struct maps m;
	size_t i;

	(void)state;
	maps_init(&m);
	assert_int_equal(parse_exact(&m, text, strlen(text)), 0);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.skipped, 4);
	assert_string_equal(m.v[0].path, "/a");
	assert_string_equal(m.v[1].path, "/b");
	assert_string_equal(m.v[2].path, "/c");
	for (i = 1; i < m.n; i++)
		assert_true(m.v[i - 1].end <= m.v[i].start);
	assert_string_equal(maps_find(&m, 0x2fff)->path, "/a");
	assert_string_equal(maps_find(&m, 0x3000)->path, "/b");
	assert_null(maps_find(&m, 0x600));
	maps_release(&m);
}

static void test_replace_and_many(void **state)
{
	struct maps m;
	char *text;
	size_t cap = 20000 * 80, len = 0, i;
	int n;

	(void)state;
	maps_init(&m);
	assert_int_equal(maps_parse(&m, real_text, strlen(real_text)), 0);
	assert_int_equal(m.n, 10);
	/* A second parse replaces the entries, and the skipped count. */
	text = "junk\n1000-2000 r--p 0 0:0 0\n";
	assert_int_equal(maps_parse(&m, text, strlen(text)), 0);
	assert_int_equal(m.n, 1);
	assert_int_equal(m.skipped, 1);
	assert_int_equal(maps_parse(&m, "", 0), 0);
	assert_int_equal(m.n, 0);
	assert_int_equal(m.skipped, 0);

	text = malloc(cap);
	assert_non_null(text);
	for (i = 0; i < 20000; i++) {
		n = snprintf(text + len, cap - len, "%zx-%zx r-xp %08zx 08:01 %zu /lib/lib%zu.so\n",
			     0x10000 + i * 0x2000, 0x11000 + i * 0x2000, i * 0x1000, i, i / 4);
		assert_true(n > 0 && (size_t)n < cap - len);
		len += (size_t)n;
	}
	assert_int_equal(maps_parse(&m, text, len), 0);
	assert_int_equal(m.n, 20000);
	assert_int_equal(m.skipped, 0);
	for (i = 0; i < 20000; i += 997) {
		char want[64];
		const struct map_entry *e = maps_find(&m, 0x10000 + i * 0x2000 + 0xfff);

		assert_non_null(e);
		assert_int_equal(e->inode, i);
		snprintf(want, sizeof(want), "/lib/lib%zu.so", i / 4);
		assert_string_equal(e->path, want);
		assert_null(maps_find(&m, 0x11000 + i * 0x2000)); /* the gap */
	}
	maps_release(&m);
	free(text);
}

static int under_valgrind(const char *stack_path)
{
	const char *preload = getenv("LD_PRELOAD");

	return stack_path[0] == 0 && preload && strstr(preload, "valgrind");
}

static int local_function(int x)
{
	return x * 3 + 1;
}

static void test_read_self(void **state)
{
	int (*volatile fp)(int) = local_function;
	char exe[PATH_MAX];
	ssize_t n;
	struct maps m;
	const struct map_entry *e;
	int on_stack = 0;

	(void)state;
	assert_int_equal(fp(1), 4);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = 0;

	maps_init(&m);
	assert_int_equal(maps_read(&m, getpid()), 0);
	assert_true(m.n > 5);
	assert_int_equal(m.skipped, 0);

	e = maps_find(&m, (uint64_t)(uintptr_t)fp);
	assert_non_null(e);
	assert_true(e->perms & MAP_X);
	assert_true(e->perms & MAP_P);
	assert_string_equal(e->path, exe);
	assert_true(e->inode != 0);

	e = maps_find(&m, (uint64_t)(uintptr_t)&on_stack);
	assert_non_null(e);
	/* Valgrind runs the program on an anonymous stack of its own. */
	if (!under_valgrind(e->path))
		assert_string_equal(e->path, "[stack]");
	assert_true(e->perms & MAP_W);

	e = maps_find(&m, (uint64_t)(uintptr_t)&errno);
	assert_non_null(e);
	maps_release(&m);

	/* No such process. */
	errno = 0;
	assert_int_equal(maps_read(&m, INT_MAX), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(m.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_lines),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_truncated_and_nul),
		cmocka_unit_test(test_path_limit),
		cmocka_unit_test(test_overlap_and_order),
		cmocka_unit_test(test_replace_and_many),
		cmocka_unit_test(test_read_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
