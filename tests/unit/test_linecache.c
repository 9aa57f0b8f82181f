/*
 * test_linecache.c — the cache of source lines by build ID (unwind/
 * linetab.h, unwind/linecache.h) and the private-directory check it
 * shares with the spool (common/privdir.h): a table written and read back
 * answers exactly what was put, zero-frame answers included, and writes
 * the same bytes again; the parser refuses every malformed file (each
 * truncation, each flipped byte, and files with a correct checksum but a
 * broken structure) and leaves the table unchanged; the caps hold; the
 * directory is refused when it is a symlink, someone else's or writable
 * by others; a corrupt file is replaced by a valid one; two caches
 * flushing one build ID both leave a valid file holding both's entries;
 * the directory is trimmed to its cap, oldest first; an object with the
 * same build ID at another inode sees none of another's entries; only
 * lines from a file of root's or ours, writable by no one else, with the
 * object's build ID, may be kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/fnv.h"
#include "common/privdir.h"
#include "unwind/dwlines.h"
#include "unwind/linecache.h"
#include "unwind/linetab.h"

#define BID "93ac61ec5a8eb1396f9fbd350e3169a558528a40"
#define DEV 0x803
#define INO 0x12345
#define IDENT "-803-12345" /* what the file name adds to the build ID */

static const struct dwlines_frame chain3[] = {
	{ "mix", "/src/lines.c", 10, 12 },
	{ "_ZN2ns4workEv", "/src/lines.c", 20, 25 },
	{ "main", "/src/main.c", 1, 7 },
};

/* A table with three addresses: a three-frame chain, one frame, none. */
static struct linetab *sample_table(void)
{
	struct linetab *t = linetab_new(BID);

	assert_non_null(t);
	assert_int_equal(linetab_put(t, 0x2000, chain3, 3), 0);
	assert_int_equal(linetab_put(t, 0x1000, chain3 + 2, 1), 0);
	assert_int_equal(linetab_put(t, 0x3000, NULL, 0), 0);
	return t;
}

static void write_table(const struct linetab *t, struct buf *b)
{
	buf_init(b, LINETAB_MAX_BYTES);
	assert_int_equal(linetab_write(t, b), 0);
}

static void assert_chain(const struct linetab *t, uint64_t va, const struct dwlines_frame *want,
			 size_t n)
{
	struct dwlines_frame f[DWLINES_MAX_FRAMES];
	size_t got, i;

	assert_int_equal(linetab_get(t, va, f, DWLINES_MAX_FRAMES, &got), 1);
	assert_int_equal(got, n);
	for (i = 0; i < n; i++) {
		assert_string_equal(f[i].name, want[i].name);
		assert_string_equal(f[i].file, want[i].file);
		assert_int_equal(f[i].start_line, want[i].start_line);
		assert_int_equal(f[i].line, want[i].line);
	}
}

static void test_round_trip(void **state)
{
	struct linetab *t = sample_table(), *u;
	struct buf a, b;
	size_t added, n;
	struct dwlines_frame f[DWLINES_MAX_FRAMES];

	(void)state;
	/* A second put of an address changes nothing. */
	assert_int_equal(linetab_put(t, 0x2000, chain3 + 1, 1), 1);
	write_table(t, &a);
	u = linetab_new(BID);
	assert_int_equal(linetab_merge(u, a.data, a.len, &added), 0);
	assert_int_equal(added, 3);
	assert_int_equal(linetab_count(u), 3);
	assert_chain(u, 0x2000, chain3, 3);
	assert_chain(u, 0x1000, chain3 + 2, 1);
	assert_chain(u, 0x3000, NULL, 0);
	assert_int_equal(linetab_get(u, 0x2001, f, DWLINES_MAX_FRAMES, &n), 0);
	/* max cuts the chain */
	assert_int_equal(linetab_get(u, 0x2000, f, 2, &n), 1);
	assert_int_equal(n, 2);
	/* The same bytes again, and merging them twice adds nothing. */
	write_table(u, &b);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	assert_int_equal(linetab_merge(u, a.data, a.len, &added), 0);
	assert_int_equal(added, 0);
	/* Strings are shared: "/src/lines.c" is in the file once. */
	assert_non_null(memmem(a.data, a.len, "/src/lines.c", 13));
	assert_null(memmem((unsigned char *)memmem(a.data, a.len, "/src/lines.c", 13) + 13,
			   a.len - ((unsigned char *)memmem(a.data, a.len, "/src/lines.c", 13) -
				    a.data) - 13,
			   "/src/lines.c", 13));
	buf_release(&a);
	buf_release(&b);
	linetab_free(t);
	linetab_free(u);
}

/* Recompute the checksum of a file edited in place. */
static void reseal(unsigned char *p, size_t len)
{
	uint64_t h = fnv_bytes(FNV_OFFSET, p + LINETAB_HEADER, len - LINETAB_HEADER);
	int i;

	for (i = 0; i < 8; i++)
		p[32 + i] = (unsigned char)(h >> (8 * i));
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* Merging p[0..len) fails and leaves a fresh table empty. */
static void assert_refused(const unsigned char *p, size_t len)
{
	struct linetab *u = linetab_new(BID);
	size_t added = 99;

	assert_int_equal(linetab_merge(u, p, len, &added), -1);
	assert_int_equal(added, 0);
	assert_int_equal(linetab_count(u), 0);
	linetab_free(u);
}

static void test_parser_refuses(void **state)
{
	struct linetab *t = sample_table(), *other;
	struct buf a;
	unsigned char *c;
	size_t i, bid = strlen(BID), ent = LINETAB_HEADER + bid, fr = ent + 3 * 16, str;

	(void)state;
	write_table(t, &a);
	str = fr + 4 * 16; /* 3 + 1 + 0 frames */
	c = malloc(a.len + 1);
	/* Every truncation, and one byte too many. */
	for (i = 0; i < a.len; i++)
		assert_refused(a.data, i);
	memcpy(c, a.data, a.len);
	c[a.len] = 0;
	assert_refused(c, a.len + 1);
	/* Every single flipped byte. */
	for (i = 0; i < a.len; i++) {
		memcpy(c, a.data, a.len);
		c[i] ^= 0x41;
		assert_refused(c, a.len);
	}
#define BROKEN(edit)                          \
	do {                                  \
		memcpy(c, a.data, a.len);     \
		edit;                         \
		reseal(c, a.len);             \
		assert_refused(c, a.len);     \
	} while (0)
	/* Checksums right, structure wrong. */
	BROKEN(put32(c + 8, LINETAB_VERSION + 1));                  /* another version */
	BROKEN(c[LINETAB_HEADER] = 'f');                           /* another build ID */
	BROKEN(put32(c + 28, 1));                                  /* reserved word */
	BROKEN(put32(c + 16, LINETAB_MAX_ENTRIES + 1));            /* counts past the caps */
	BROKEN(put32(c + 16, 4));                                  /* counts against the length */
	BROKEN(memcpy(c + ent, c + ent + 16, 8));                  /* addresses not increasing */
	BROKEN(put32(c + ent + 12, DWLINES_MAX_FRAMES + 1));       /* too many frames */
	BROKEN(put32(c + ent + 16 + 8, 2));                        /* frames past the table */
	BROKEN(put32(c + ent + 16 + 8, UINT32_MAX));               /* ... overflowing */
	BROKEN(put32(c + fr, (uint32_t)(a.len - str)));            /* a name past the strings */
	BROKEN(put32(c + fr + 4, UINT32_MAX));                     /* a file past the strings */
	BROKEN(put32(c + fr + 8, (uint32_t)INT32_MAX + 1));        /* a declaration line */
	BROKEN(put32(c + fr + 12, UINT32_MAX));                    /* a line */
	BROKEN(c[a.len - 1] = 'x');                                /* the last string unended */
	/* A foreign file: right in itself, another build ID. */
	other = linetab_new("abcd");
	assert_int_equal(linetab_put(other, 1, chain3, 1), 0);
	buf_truncate(&a, 0);
	assert_int_equal(linetab_write(other, &a), 0);
	assert_refused(a.data, a.len);
	/* Not a file at all. */
	assert_refused((const unsigned char *)"hello", 5);
	assert_refused(NULL, 0);
	free(c);
	buf_release(&a);
	linetab_free(t);
	linetab_free(other);
}

static void test_string_cap(void **state)
{
	static char longname[DWLINES_MAX_NAME + 8];
	struct dwlines_frame f = { longname, "", 0, 0 };
	struct linetab *t = linetab_new(BID), *u;
	struct buf a;
	unsigned char *c;
	size_t len, added;

	(void)state;
	/* A name as long as DWLINES_MAX_NAME is refused on put... */
	memset(longname, 'n', DWLINES_MAX_NAME);
	assert_int_equal(linetab_put(t, 1, &f, 1), -1);
	/* ... and in a file, even with its checksum right. */
	longname[DWLINES_MAX_NAME - 1] = 0;
	assert_int_equal(linetab_put(t, 1, &f, 1), 0);
	buf_init(&a, LINETAB_MAX_BYTES);
	assert_int_equal(linetab_write(t, &a), 0);
	len = a.len;
	c = malloc(len + 1);
	memcpy(c, a.data, len);
	/* Turn the name's NUL and the empty file name into one run past the limit. */
	c[len - 2] = 'n';
	reseal(c, len);
	assert_refused(c, len);
	u = linetab_new(BID);
	assert_int_equal(linetab_merge(u, a.data, a.len, &added), 0);
	assert_int_equal(added, 1);
	linetab_free(u);
	free(c);
	buf_release(&a);
	linetab_free(t);
}

static void test_keys_and_caps(void **state)
{
	struct dwlines_frame bad;
	struct linetab *t;
	struct buf a;
	size_t i, added;
	int r = 0;

	(void)state;
	assert_null(linetab_new(""));
	assert_null(linetab_new("a"));
	assert_null(linetab_new("ABCD")); /* lowercase only, as elfimg writes it */
	assert_null(linetab_new("../etc"));
	assert_null(linetab_new("-ab")); /* a key's '-' separates its parts, never leads */
	assert_true(linetab_key_ok("ab-803-12345"));
	assert_null(linetab_new(NULL));
	assert_false(linetab_key_ok("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
				    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0"));
	/* Chains past DWLINES_MAX_FRAMES and lines out of range are not kept. */
	t = linetab_new("cd");
	assert_int_equal(linetab_put(t, 1, chain3, DWLINES_MAX_FRAMES + 1), -1);
	bad = chain3[0];
	bad.line = (int64_t)INT32_MAX + 1;
	assert_int_equal(linetab_put(t, 1, &bad, 1), -1);
	bad.line = -1;
	assert_int_equal(linetab_put(t, 1, &bad, 1), -1);
	assert_int_equal(linetab_count(t), 0);
	linetab_free(t);
	t = linetab_new("ab");
	assert_non_null(t);
	for (i = 0; i < LINETAB_MAX_ENTRIES && r == 0; i++)
		r = linetab_put(t, i, chain3, 1);
	assert_int_equal(r, 0);
	assert_int_equal(linetab_count(t), LINETAB_MAX_ENTRIES);
	assert_int_equal(linetab_put(t, i, chain3, 1), -1);
	buf_init(&a, LINETAB_MAX_BYTES);
	assert_int_equal(linetab_write(t, &a), 0);
	assert_true(a.len <= LINETAB_MAX_BYTES);
	linetab_free(t);
	t = linetab_new("ab");
	assert_int_equal(linetab_merge(t, a.data, a.len, &added), 0);
	assert_int_equal(added, LINETAB_MAX_ENTRIES);
	buf_release(&a);
	linetab_free(t);
}

static char dir[256];

static int dir_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cprof-test-lc.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int dir_teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *out, size_t cap, const char *sub)
{
	snprintf(out, cap, "%s/%s", dir, sub);
}

static void test_privdir(void **state)
{
	char d[300], why[600], l[300];
	int fd;

	(void)state;
	path_of(d, sizeof(d), "a/b/c");
	/* Without write, a missing directory is ENOENT, not created. */
	assert_int_equal(privdir_open(d, "line cache directory", 0, why, sizeof(why)), -1);
	assert_int_equal(errno, ENOENT);
	fd = privdir_open(d, "line cache directory", 1, why, sizeof(why));
	assert_true(fd >= 0);
	close(fd);
	chmod(d, 0777);
	assert_int_equal(privdir_open(d, "line cache directory", 0, why, sizeof(why)), -1);
	assert_int_equal(errno, EPERM);
	assert_non_null(strstr(why, "is writable by others (mode 777)"));
	assert_non_null(strstr(why, "line cache directory \""));
	chmod(d, 0700);
	path_of(l, sizeof(l), "link");
	assert_int_equal(symlink(d, l), 0);
	assert_int_equal(privdir_open(l, "spool directory", 1, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "is a symbolic link"));
	if (geteuid() == 0) {
		assert_int_equal(chown(d, 12345, 12345), 0);
		assert_int_equal(privdir_open(d, "spool directory", 0, why, sizeof(why)), -1);
		assert_non_null(strstr(why, "belongs to another user (uid 12345)"));
		assert_int_equal(chown(d, 0, 0), 0);
	}
	setenv("XDG_CACHE_HOME", "/x/cache", 1);
	assert_string_equal(privdir_cache("lines", d, sizeof(d)), "/x/cache/cprof/lines");
	setenv("XDG_CACHE_HOME", "relative", 1);
	setenv("HOME", "/home/u", 1);
	assert_string_equal(privdir_cache("lines", d, sizeof(d)), "/home/u/.cache/cprof/lines");
	unsetenv("HOME");
	unsetenv("XDG_CACHE_HOME");
	/* Neither: root's own cache directory, else none (never a shared /tmp path). */
	if (geteuid() == 0)
		assert_string_equal(privdir_cache("lines", d, sizeof(d)), "/var/cache/cprof/lines");
	else
		assert_null(privdir_cache("lines", d, sizeof(d)));
}

static size_t file_entries(const char *d)
{
	char p[400];
	struct buf b;
	struct linetab *t = linetab_new(BID IDENT);
	size_t added = 0;
	int fd;

	snprintf(p, sizeof(p), "%s/" BID IDENT ".lines", d);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	buf_init(&b, LINETAB_MAX_BYTES);
	assert_int_equal(buf_read_fd(&b, fd), 0);
	close(fd);
	assert_int_equal(linetab_merge(t, b.data, b.len, &added), 0);
	buf_release(&b);
	linetab_free(t);
	return added;
}

static void test_cache_dir(void **state)
{
	struct linecache *c1, *c2, *c3;
	struct linetab *t1, *t2;
	struct stat st;
	char d[300], p[400];
	int fd;

	(void)state;
	path_of(d, sizeof(d), "cache/cprof/lines");
	/* A corrupt file is ignored, then replaced by a valid one. */
	c1 = linecache_new(d);
	assert_null(linecache_table(c1, "not hex", DEV, INO));
	assert_null(linecache_table(c1, "", DEV, INO)); /* no build ID: not cached */
	t1 = linecache_table(c1, BID, DEV, INO);
	assert_non_null(t1);
	assert_int_equal(linetab_count(t1), 0);
	assert_int_equal(linetab_put(t1, 0x10, chain3, 3), 0);
	assert_int_equal(linecache_flush(c1), 0);
	assert_int_equal(stat(d, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(file_entries(d), 1);
	snprintf(p, sizeof(p), "%s/" BID IDENT ".lines", d);
	fd = open(p, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "garbage", 7), 7);
	close(fd);
	linecache_free(c1);
	c1 = linecache_new(d);
	t1 = linecache_table(c1, BID, DEV, INO);
	assert_int_equal(linetab_count(t1), 0);
	/* Two runs, each with its own address, flushing one after the other. */
	c2 = linecache_new(d);
	t2 = linecache_table(c2, BID, DEV, INO);
	assert_int_equal(linetab_put(t1, 0x10, chain3, 3), 0);
	assert_int_equal(linetab_put(t2, 0x20, chain3 + 1, 2), 0);
	assert_int_equal(linecache_flush(c1), 0);
	assert_int_equal(linecache_flush(c2), 0);
	assert_int_equal(file_entries(d), 2);
	/* A third run reads both, and finds them where they were put. */
	c3 = linecache_new(d);
	assert_chain(linecache_table(c3, BID, DEV, INO), 0x10, chain3, 3);
	assert_chain(linecache_table(c3, BID, DEV, INO), 0x20, chain3 + 1, 2);
	/* Another object claiming the same build ID (another inode) sees none of it. */
	assert_int_equal(linetab_count(linecache_table(c3, BID, DEV, INO + 1)), 0);
	assert_int_equal(linetab_count(linecache_table(c3, BID, DEV + 1, INO)), 0);
	/* Nothing new: no temporary file is left, nothing is rewritten. */
	assert_int_equal(linecache_flush(c3), 0);
	linecache_free(c1);
	linecache_free(c2);
	linecache_free(c3);
	/* A directory others may write to is refused: no table, no file. */
	assert_int_equal(chmod(d, 0770), 0);
	c1 = linecache_new(d);
	assert_null(linecache_table(c1, "abcd", DEV, INO));
	assert_int_equal(linecache_flush(c1), 0);
	linecache_free(c1);
	assert_int_equal(chmod(d, 0700), 0);
}

static void test_trim(void **state)
{
	struct timespec old[2] = { { 1000000, 0 }, { 1000000, 0 } };
	char d[300], p[400], id[16];
	struct linecache *c;
	struct dirent *de;
	size_t n = 0;
	unsigned i;
	DIR *dd;
	int fd;

	(void)state;
	path_of(d, sizeof(d), "trim");
	assert_int_equal(mkdir(d, 0700), 0);
	/* The cap's worth of old files, and a temporary file left by a killed run. */
	for (i = 0; i < LINECACHE_DIR_FILES; i++) {
		snprintf(p, sizeof(p), "%s/%08x.lines", d, i);
		fd = open(p, O_WRONLY | O_CREAT, 0600);
		assert_true(fd >= 0);
		futimens(fd, old);
		close(fd);
	}
	snprintf(p, sizeof(p), "%s/.dead.1.tmp", d);
	fd = open(p, O_WRONLY | O_CREAT, 0600);
	futimens(fd, old);
	close(fd);
	c = linecache_new(d);
	snprintf(id, sizeof(id), "ffffffff");
	assert_int_equal(linetab_put(linecache_table(c, id, DEV, INO), 1, chain3, 1), 0);
	assert_int_equal(linecache_flush(c), 0);
	linecache_free(c);
	dd = opendir(d);
	while ((de = readdir(dd)))
		n += de->d_name[0] != '.';
	closedir(dd);
	assert_int_equal(n, LINECACHE_DIR_FILES);
	snprintf(p, sizeof(p), "%s/ffffffff" IDENT ".lines", d);
	assert_int_equal(access(p, F_OK), 0); /* the new one stays */
	snprintf(p, sizeof(p), "%s/.dead.1.tmp", d);
	assert_int_equal(access(p, F_OK), -1);
}

/*
 * Whose lines are kept: a file owned by root or by us, writable by no one
 * else, with the object's build ID; not one another user owns or may
 * write, nor one whose build ID is not the object's.
 */
static void test_trusted(void **state)
{
	char copy[300], hex[LINETAB_MAX_BUILD_ID + 1], cmd[700];
	struct dwlines *l;
	struct stat st;

	(void)state;
	path_of(copy, sizeof(copy), "self-copy");
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe '%s'", (int)getpid(), copy);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(chmod(copy, 0644), 0);
	l = dwlines_open(open(copy, O_RDONLY | O_CLOEXEC), 0);
	assert_non_null(l);
	assert_int_equal(dwlines_file(l, &st, hex, sizeof(hex)), 0);
	assert_true(linetab_key_ok(hex));
	assert_true(linecache_trusted(l, hex));
	assert_false(linecache_trusted(l, BID));  /* another object's build ID */
	assert_false(linecache_trusted(l, NULL));
	assert_false(linecache_trusted(NULL, hex));
	dwlines_free(l);
	/* Writable by the group: someone else could have put its lines there. */
	assert_int_equal(chmod(copy, 0664), 0);
	l = dwlines_open(open(copy, O_RDONLY | O_CLOEXEC), 0);
	assert_false(linecache_trusted(l, hex));
	dwlines_free(l);
	assert_int_equal(chmod(copy, 0644), 0);
	if (geteuid() == 0) {
		/* Another user's file: its word, for its own profile only. */
		assert_int_equal(chown(copy, 12345, 12345), 0);
		l = dwlines_open(open(copy, O_RDONLY | O_CLOEXEC), 0);
		assert_false(linecache_trusted(l, hex));
		dwlines_free(l);
	}
	unlink(copy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_parser_refuses),
		cmocka_unit_test(test_string_cap),
		cmocka_unit_test(test_keys_and_caps),
		cmocka_unit_test(test_privdir),
		cmocka_unit_test(test_cache_dir),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_trusted),
	};

	return cmocka_run_group_tests(tests, dir_setup, dir_teardown);
}
