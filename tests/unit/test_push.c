/*
 * test_push.c — the push module's parts that need no network: spool
 * metadata written and read back, and refused when cut short, repeated,
 * out of range or of another version; the server's message taken from
 * Pyroscope's JSON error or a plain body, one printable line within its
 * buffer; --label checks; the spool itself in a temporary directory:
 * entries listed oldest first, taken once (a second taker finds it held),
 * removed when done, and the cap dropping the oldest first, each drop
 * reported.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/push/label.h"
#include "attach/push/parse.h"
#include "attach/push/push.h"
#include "attach/push/spool.h"

static const char good[] = "version=1\nname=app{env=prod,hostname=h,pid=7}\nkind=block\n"
			   "from_ns=1000000000\nuntil_ns=2500000000\ncapture=4\npid=7\n";

static void test_meta(void **state)
{
	struct spool_meta m, m2;
	char text[SPOOL_META_MAX + 1];
	int n;

	(void)state;
	assert_int_equal(spool_meta_parse(good, strlen(good), &m), 0);
	assert_string_equal(m.name, "app{env=prod,hostname=h,pid=7}");
	assert_string_equal(m.kind, "block");
	assert_true(m.from_ns == 1000000000ull && m.until_ns == 2500000000ull);
	assert_int_equal(m.capture, 4);
	assert_int_equal(m.pid, 7);
	n = spool_meta_format(&m, text, sizeof(text));
	assert_true(n > 0);
	assert_int_equal(spool_meta_parse(text, (size_t)n, &m2), 0);
	assert_memory_equal(&m, &m2, sizeof(m));
	/* an unknown key is skipped */
	snprintf(text, sizeof(text), "%sfuture=1\n", good);
	assert_int_equal(spool_meta_parse(text, strlen(text), &m), 0);
	/* cut short (last line unterminated), a key twice, until < from, bad version, overflow */
	assert_int_equal(spool_meta_parse(good, strlen(good) - 1, &m), -1);
	snprintf(text, sizeof(text), "%spid=8\n", good);
	assert_int_equal(spool_meta_parse(text, strlen(text), &m), -1);
	snprintf(text, sizeof(text), "version=1\nname=a{}\nkind=cpu\nfrom_ns=5\nuntil_ns=4\n"
		 "capture=1\npid=1\n");
	assert_int_equal(spool_meta_parse(text, strlen(text), &m), -1);
	snprintf(text, sizeof(text), "version=2\nname=a{}\nkind=cpu\nfrom_ns=4\nuntil_ns=4\n"
		 "capture=1\npid=1\n");
	assert_int_equal(spool_meta_parse(text, strlen(text), &m), -1);
	text[8] = '1'; /* the same with version 1 parses */
	assert_int_equal(spool_meta_parse(text, strlen(text), &m), 0);
	snprintf(text, sizeof(text), "version=1\nname=a{}\nkind=cpu\nfrom_ns=18446744073709551616\n"
		 "until_ns=4\ncapture=1\npid=1\n");
	assert_int_equal(spool_meta_parse(text, strlen(text), &m), -1);
	/* a control byte in a value */
	snprintf(text, sizeof(text), "version=1\nname=a{\x01}\nkind=cpu\nfrom_ns=4\nuntil_ns=4\n"
		 "capture=1\npid=1\n");
	assert_int_equal(spool_meta_parse(text, strlen(text), &m), -1);
}

static void test_reply(void **state)
{
	static const char json[] = "{\"code\":\"invalid_argument\",\"message\":\"profile too \\\"old\\\"\\n\"}\n";
	char out[64], small[16];

	(void)state;
	reply_message(json, strlen(json), out, sizeof(out));
	assert_string_equal(out, "profile too \"old\" ");
	reply_message("bad gateway\r\n<html>", 20, out, sizeof(out));
	assert_string_equal(out, "bad gateway");
	reply_message("", 0, out, sizeof(out));
	assert_string_equal(out, "(no message)");
	reply_message("a\x01\xff" "b", 4, out, sizeof(out));
	assert_string_equal(out, "a??b");
	reply_message("0123456789abcdefghij", 20, small, sizeof(small));
	assert_string_equal(small, "0123456789abcde");
	reply_message("{\"message\":", 11, out, sizeof(out)); /* cut short: the raw line */
	assert_string_equal(out, "{\"message\":");
}

static void test_labels(void **state)
{
	(void)state;
	assert_int_equal(push_label_check("env=prod"), 0);
	assert_int_equal(push_label_check("k8s.ns=a-b/c d"), 0);
	assert_int_equal(push_label_check("env"), -1);
	assert_int_equal(push_label_check("=x"), -1);
	assert_int_equal(push_label_check("env="), -1);
	assert_int_equal(push_label_check("__name__=x"), -1);
	assert_int_equal(push_label_check("a-b=x"), -1);
	assert_int_equal(push_label_check("env=a,b"), -1);
	assert_int_equal(push_label_check("env=a}"), -1);
}

static char dropped[8][SPOOL_STEM_MAX];
static int ndropped;

static void on_drop(void *ctx, const char *stem)
{
	(void)ctx;
	if (ndropped < 8)
		snprintf(dropped[ndropped++], SPOOL_STEM_MAX, "%s", stem);
}

static void test_spool(void **state)
{
	char dir[] = "/tmp/cprof-test-spool.XXXXXX", sub[64], (*stems)[SPOOL_STEM_MAX];
	struct spool_meta m;
	struct spool_item it, it2;
	struct spool *sp;
	char data[4000];
	long n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	assert_int_equal(spool_meta_parse(good, strlen(good), &m), 0);
	memset(data, 0x1f, sizeof(data));
	/* a cap for three entries of ~1100 bytes */
	assert_int_equal(spool_open(&sp, sub, 3500), 0);
	assert_int_equal(spool_add(sp, "00000000000000000002-r-2", &m, data, 1000, on_drop, NULL), 0);
	assert_int_equal(spool_add(sp, "00000000000000000001-r-1", &m, data, 1000, on_drop, NULL), 0);
	assert_int_equal(spool_add(sp, "00000000000000000003-r-3", &m, data, 1000, on_drop, NULL), 0);
	n = spool_list(sp, &stems);
	assert_int_equal(n, 3);
	assert_string_equal(stems[0], "00000000000000000001-r-1");
	assert_string_equal(stems[2], "00000000000000000003-r-3");
	free(stems);
	/* the fourth drops the oldest */
	assert_int_equal(spool_add(sp, "00000000000000000004-r-4", &m, data, 1000, on_drop, NULL), 0);
	assert_int_equal(ndropped, 1);
	assert_string_equal(dropped[0], "00000000000000000001-r-1");
	/* one too big for the cap is not kept */
	assert_int_equal(spool_add(sp, "00000000000000000005-r-5", &m, data, sizeof(data), on_drop, NULL), 1);
	assert_int_equal(ndropped, 2);
	assert_string_equal(dropped[1], "00000000000000000005-r-5");
	ndropped = 0;
	/* taken once: a second taker (another process) finds it held */
	assert_int_equal(spool_take(sp, "00000000000000000002-r-2", &it), 0);
	assert_int_equal(it.data.len, 1000);
	assert_string_equal(it.meta.kind, "block");
	assert_int_equal(spool_take(sp, "00000000000000000002-r-2", &it2), 1);
	/* the cap skips the entry being sent (the oldest) and drops the next */
	assert_int_equal(spool_add(sp, "00000000000000000006-r-6", &m, data, 1000, on_drop, NULL), 0);
	assert_int_equal(ndropped, 1);
	assert_string_equal(dropped[0], "00000000000000000003-r-3");
	/* sent: removed; gone for any later taker */
	spool_done(sp, &it, 1);
	assert_int_equal(spool_take(sp, "00000000000000000002-r-2", &it2), 1);
	n = spool_list(sp, &stems);
	assert_int_equal(n, 2);
	assert_string_equal(stems[0], "00000000000000000004-r-4");
	free(stems);
	/* bad metadata: unreadable, skipped */
	{
		char path[256];
		FILE *f;

		snprintf(path, sizeof(path), "%s/00000000000000000004-r-4.meta", sub);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs("version=1\nname=x\n", f);
		fclose(f);
		assert_int_equal(spool_take(sp, "00000000000000000004-r-4", &it), 2);
	}
	/* a run's lock: alive while held (seen through another open spool), gone after */
	{
		struct spool *sp2;

		assert_int_equal(spool_open(&sp2, sub, 3500), 0);
		assert_int_equal(spool_run_alive(sp2, "1.2"), 0);
		assert_int_equal(spool_lock_run(sp, "1.2"), 0);
		assert_int_equal(spool_run_alive(sp2, "1.2"), 1);
		assert_true(spool_has(sp2, "00000000000000000004-r-4"));
		assert_false(spool_has(sp2, "00000000000000000002-r-2"));
		spool_release(sp);
		assert_int_equal(spool_run_alive(sp2, "1.2"), 0);
		sp = sp2;
	}
	spool_release(sp);
	assert_int_equal(spool_open(&sp, "/proc/cprof-no-such/x", 1000), -1);
	/* Refused: a directory others may write to, a symlink to one's own. */
	{
		char open_dir[300], link[300];

		snprintf(open_dir, sizeof(open_dir), "%s/open", dir);
		snprintf(link, sizeof(link), "%s/link", dir);
		assert_int_equal(mkdir(open_dir, 0700), 0);
		assert_int_equal(chmod(open_dir, 0777), 0);
		assert_int_equal(spool_open(&sp, open_dir, 1000), -1);
		assert_int_equal(symlink(sub, link), 0);
		assert_int_equal(spool_open(&sp, link, 1000), -1);
	}
	/*
	 * The directory swapped after the check (renamed away, another user's
	 * directory linked in its place): the spool keeps to the one it
	 * checked, and nothing is written or read at the planted path.
	 */
	{
		char moved[300], planted[300], path[400];
		struct stat st;

		snprintf(moved, sizeof(moved), "%s/moved", dir);
		snprintf(planted, sizeof(planted), "%s/planted", dir);
		assert_int_equal(mkdir(planted, 0777), 0);
		ndropped = 0;
		assert_int_equal(spool_open(&sp, sub, 100000), 0);
		assert_int_equal(rename(sub, moved), 0);
		assert_int_equal(symlink(planted, sub), 0);
		assert_int_equal(spool_lock_run(sp, "9.9"), 0);
		assert_int_equal(spool_add(sp, "00000000000000000009-r-9", &m, data, 100, on_drop, NULL), 0);
		assert_true(spool_has(sp, "00000000000000000009-r-9"));
		snprintf(path, sizeof(path), "%s/00000000000000000009-r-9.pb.gz", moved);
		assert_int_equal(stat(path, &st), 0);
		snprintf(path, sizeof(path), "%s/00000000000000000009-r-9.pb.gz", planted);
		assert_int_equal(stat(path, &st), -1);
		snprintf(path, sizeof(path), "%s/.run-9.9.lock", planted);
		assert_int_equal(stat(path, &st), -1);
		assert_int_equal(spool_take(sp, "00000000000000000009-r-9", &it), 0);
		assert_int_equal(it.data.len, 100);
		spool_done(sp, &it, 1);
		snprintf(path, sizeof(path), "%s/00000000000000000009-r-9.pb.gz", moved);
		assert_int_equal(stat(path, &st), -1);
		spool_release(sp);
	}
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meta),
		cmocka_unit_test(test_reply),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_spool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
