/*
 * test_demangle.c — C++ names come out readable, everything else comes
 * out untouched, and hostile names are not handed to the demangler.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "unwind/demangle.h"

static void test_cxx(void **state)
{
	char out[256];

	(void)state;
	assert_string_equal(demangle("_ZN3foo3barEi", out, sizeof(out)), "foo::bar(int)");
	assert_string_equal(demangle("_Z4workv", out, sizeof(out)), "work()");
	assert_string_equal(demangle("_ZNSt6vectorIiSaIiEE9push_backERKi", out, sizeof(out)),
			    "std::vector<int, std::allocator<int> >::push_back(int const&)");
}

static void test_passthrough(void **state)
{
	static const char *same[] = { "main", "spin_forever", "__libc_start_main", "_Z", "_Zxyz", "" };
	char out[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		assert_ptr_equal(demangle(same[i], out, sizeof(out)), same[i]);
}

static void test_truncation(void **state)
{
	char out[8];

	(void)state;
	assert_string_equal(demangle("_ZN3foo3barEi", out, sizeof(out)), "foo::ba");
}

static void test_overlong(void **state)
{
	static char name[DEMANGLE_MAX_IN + 16];
	char out[64];

	(void)state;
	memset(name, 'a', sizeof(name) - 1);
	memcpy(name, "_ZN", 3);
	assert_ptr_equal(demangle(name, out, sizeof(out)), name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cxx),
		cmocka_unit_test(test_passthrough),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_overlong),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
