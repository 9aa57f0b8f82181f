/*
 * test_shim_got.c — unit tests for shim/got.c, linked alone: patching
 * this test program's own GOT slots (getppid's JUMP_SLOT and, through its
 * address, a GLOB_DAT or the canonical PLT) points its calls at a hook
 * and got_restore puts them back; a second pass patches nothing already
 * patched; the object holding self is skipped; an unknown name patches
 * nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim/got.h"

static pid_t hook_getppid(void)
{
	return -42;
}

/* Calls through this program's slot (the compiler cannot fold it: an external call). */
static __attribute__((noinline)) pid_t call_getppid(void)
{
	return getppid();
}

static void test_patch_restore(void **state)
{
	struct got_hook h[] = { { "getppid", (void *)hook_getppid } };
	pid_t real = call_getppid();
	int n;

	(void)state;
	assert_true(real > 0);
	n = got_patch(h, 1, NULL);
	assert_true(n >= 1);
	assert_int_equal(call_getppid(), -42);
	assert_int_equal(got_saved(), (size_t)n);
	/* Patched already: a second pass finds nothing to do. */
	assert_int_equal(got_patch(h, 1, NULL), 0);
	assert_int_equal(got_restore(), n);
	assert_int_equal(call_getppid(), real);
	assert_int_equal(got_saved(), 0);
	assert_int_equal(got_restore(), 0);
}

static void test_self_skipped(void **state)
{
	struct got_hook h[] = { { "getppid", (void *)hook_getppid } };
	pid_t real = call_getppid();

	(void)state;
	/* self in this program: its slots are not touched (libc's own may be). */
	assert_true(got_patch(h, 1, (const void *)call_getppid) >= 0);
	assert_int_equal(call_getppid(), real);
	(void)got_restore();
}

static void test_unknown_name(void **state)
{
	struct got_hook h[] = { { "no_such_function_anywhere", (void *)hook_getppid } };

	(void)state;
	assert_int_equal(got_patch(h, 1, NULL), 0);
	assert_int_equal(got_restore(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patch_restore),
		cmocka_unit_test(test_self_skipped),
		cmocka_unit_test(test_unknown_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
