/*
 * test_naming.c — output name templates: every %-sequence, literal text,
 * refusal of unknown or dangling sequences and of names that do not fit,
 * and which templates name each capture differently.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "attach/cli/naming.h"

static const struct name_vars vars = { 4242, 1795312988, 7, "cpu" }; /* 2026-11-22T02:03:08Z */

static void expect(const char *tmpl, const char *want)
{
	char out[256], why[128];

	assert_int_equal(name_expand(tmpl, &vars, out, sizeof(out), why, sizeof(why)), 0);
	assert_string_equal(out, want);
}

static void test_sequences(void **state)
{
	(void)state;
	expect("cpu-%p-%n.pb.gz", "cpu-4242-7.pb.gz");
	expect("%T-%t", "cpu-20261122T020308Z");
	expect("/var/prof/%p/%T.%n", "/var/prof/4242/cpu.7");
	expect("100%%-%n", "100%-7");
	expect("plain", "plain");
	expect("", "");
}

static void test_refusals(void **state)
{
	char out[256], why[128];

	(void)state;
	assert_int_equal(name_expand("a%", &vars, out, sizeof(out), why, sizeof(why)), -1);
	assert_non_null(strstr(why, "lone"));
	assert_int_equal(name_expand("a%x", &vars, out, sizeof(out), why, sizeof(why)), -1);
	assert_non_null(strstr(why, "%x"));
	/* Exactly fits: 9 chars + NUL in 10 bytes; one more does not. */
	assert_int_equal(name_expand("abcd-%p", &vars, out, 10, why, sizeof(why)), 0);
	assert_string_equal(out, "abcd-4242");
	assert_int_equal(name_expand("abcde-%p", &vars, out, 10, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "too long"));
}

static void test_varies(void **state)
{
	(void)state;
	assert_true(name_varies("x-%n"));
	assert_true(name_varies("x-%t.pb.gz"));
	assert_false(name_varies("x-%p-%T"));
	assert_false(name_varies("x-%%n"));
	assert_false(name_varies("x%"));
}

static void test_default(void **state)
{
	char t[64], out[256], why[128];

	(void)state;
	name_default(0, "pb.gz", t, sizeof(t));
	assert_int_equal(name_expand(t, &vars, out, sizeof(out), why, sizeof(why)), 0);
	assert_string_equal(out, "cprof-4242-cpu-20261122T020308Z.pb.gz");
	name_default(1, "txt", t, sizeof(t));
	assert_true(name_varies(t));
	assert_int_equal(name_expand(t, &vars, out, sizeof(out), why, sizeof(why)), 0);
	assert_string_equal(out, "cprof-4242-cpu-20261122T020308Z-7.txt");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequences),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_varies),
		cmocka_unit_test(test_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
