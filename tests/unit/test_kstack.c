/*
 * test_kstack.c — the parser of /proc/PID/task/TID/stack: the kernel's
 * lines give their function names, innermost first; module suffixes and
 * offsets are dropped; a line that does not parse ends the stack; names
 * are cut to KSTACK_NAME - 1 symbol characters; at most KSTACK_MAX
 * frames; random bytes never crash it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attach/ptrace/kstack.h"

static void parse(const char *text, struct kstack *k)
{
	kstack_parse(text, strlen(text), k);
}

static void test_lines(void **state)
{
	struct kstack k;

	(void)state;
	parse("[<0>] pipe_read+0x2f5/0x430\n"
	      "[<ffffffffa1b2c3d4>] vfs_read+0x2b0/0x2e0\n"
	      "[<0>] ext4_sync_file+0x1b/0x3c0 [ext4]\n"
	      "[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e\n", &k);
	assert_int_equal(k.n, 4);
	assert_string_equal(k.name[0], "pipe_read");
	assert_string_equal(k.name[1], "vfs_read");
	assert_string_equal(k.name[2], "ext4_sync_file");
	assert_string_equal(k.name[3], "entry_SYSCALL_64_after_hwframe");
	/* No trailing newline: the last line still counts. */
	parse("[<0>] do_nanosleep+0x6b/0x170", &k);
	assert_int_equal(k.n, 1);
	assert_string_equal(k.name[0], "do_nanosleep");
}

static void test_refused(void **state)
{
	struct kstack k;
	char big[200];

	(void)state;
	parse("", &k);
	assert_int_equal(k.n, 0);
	/* A line that does not parse ends the stack there. */
	parse("[<0>] a+0x1/0x2\ngarbage\n[<0>] b+0x1/0x2\n", &k);
	assert_int_equal(k.n, 1);
	parse("[<0] a\n", &k);
	assert_int_equal(k.n, 0);
	parse("[<0>]  \n", &k);
	assert_int_equal(k.n, 0);
	/* Control bytes end a name: nothing of a terminal's escapes gets in. */
	parse("[<0>] ab\x1b[31mc+0x1/0x2\n", &k);
	assert_int_equal(k.n, 1);
	assert_string_equal(k.name[0], "ab");
	/* A long name is cut. */
	memset(big, 'x', sizeof(big));
	memcpy(big, "[<0>] ", 6);
	big[sizeof(big) - 1] = '\0';
	parse(big, &k);
	assert_int_equal(k.n, 1);
	assert_int_equal(strlen(k.name[0]), KSTACK_NAME - 1);
}

static void test_bounded(void **state)
{
	struct kstack k;
	char text[8192];
	size_t off = 0;
	int i;

	(void)state;
	for (i = 0; i < 100; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "[<0>] f%d+0x1/0x2\n", i);
	parse(text, &k);
	assert_int_equal(k.n, KSTACK_MAX);
	assert_string_equal(k.name[KSTACK_MAX - 1], "f31");
	/* Random bytes: never past the buffer, never more than KSTACK_MAX. */
	srand(7);
	for (i = 0; i < 20000; i++) {
		size_t n = (size_t)(rand() % 300), j;

		for (j = 0; j < n; j++)
			text[j] = "[<0>] _+x\n"[rand() % 10];
		kstack_parse(text, n, &k);
		assert_true(k.n <= KSTACK_MAX);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
