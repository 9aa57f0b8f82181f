/*
 * test_callsite.c — unit tests for unwind/callsite against this test's own
 * code, read through a struct space of its own process: return addresses
 * taken with __builtin_return_address after a direct call, an indirect call
 * through a register and one through memory, and addresses that are not
 * after any call (a function's first instruction, data, unmapped and
 * non-canonical addresses).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/callsite.h"
#include "unwind/space.h"

static uintptr_t seen_ret;

void callsite_callee(void);
__attribute__((noinline, noclone)) void callsite_callee(void)
{
	seen_ret = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

static void (*volatile callee_ptr)(void) = callsite_callee;
static void (*volatile callee_mem[2])(void) = { callsite_callee, callsite_callee };

static int setup(void **state)
{
	struct space *s = space_new(getpid());

	if (!s)
		return -1;
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	space_free(*state);
	return 0;
}

static void test_direct(void **state)
{
	uint64_t target = 0;

	callsite_callee();
	assert_int_equal(callsite_classify(*state, seen_ret, &target), CALLSITE_DIRECT);
	assert_int_equal(target, (uintptr_t)callsite_callee);
}

static void test_indirect_register(void **state)
{
	uint64_t target = 0;
	void (*f)(void) = callee_ptr;

	f();
	assert_int_equal(callsite_classify(*state, seen_ret, &target), CALLSITE_INDIRECT);
}

static void test_indirect_memory(void **state)
{
	uint64_t target = 0;
	volatile int i = 1;

	callee_mem[i]();
	assert_int_equal(callsite_classify(*state, seen_ret, &target), CALLSITE_INDIRECT);
}

/*
 * The bytes before an indirect call that also read as e8 rel32: a mov
 * whose displacement holds e8 (as the ASan build of this very test laid
 * out test_indirect_register once). The direct reading goes nowhere, so
 * the call is the indirect one; an e8 whose target is in an object is
 * still a direct call.
 */
static const unsigned char mov_e8_then_call_rax[] = {
	0x48, 0x8b, 0x05, 0xd2, 0xe8, 0x02, 0x00, /* mov 0x2e8d2(%rip),%rax */
	0xff, 0xd0,                               /* call *%rax */
};
static const unsigned char call_rel0[] = { 0x90, 0x90, 0x90, 0xe8, 0, 0, 0, 0 };

static void test_direct_reading_nowhere(void **state)
{
	uint64_t target = 0;
	uintptr_t end = (uintptr_t)mov_e8_then_call_rax + sizeof(mov_e8_then_call_rax);

	assert_int_equal(callsite_classify(*state, end, &target), CALLSITE_INDIRECT);
	end = (uintptr_t)call_rel0 + sizeof(call_rel0);
	assert_int_equal(callsite_classify(*state, end, &target), CALLSITE_DIRECT);
	assert_int_equal(target, end);
}

static void test_not_call_sites(void **state)
{
	uint64_t target = 0;
	int r;

	/* A function's entry follows the previous function's ret or padding. */
	r = callsite_classify(*state, (uintptr_t)callsite_callee, &target);
	assert_true(r == CALLSITE_NONE ||
		    (r == CALLSITE_DIRECT && target != (uintptr_t)callsite_callee));
	/* Data and unmapped addresses are never call sites. */
	assert_int_equal(callsite_classify(*state, (uintptr_t)&seen_ret, &target), CALLSITE_NONE);
	assert_int_equal(callsite_classify(*state, 8, &target), CALLSITE_NONE);
	assert_int_equal(callsite_classify(*state, UINT64_MAX, &target), CALLSITE_NONE);
}

static void test_stub(void **state)
{
	/* Ordinary code and data are not PLT stubs. */
	assert_false(callsite_is_stub(*state, (uintptr_t)callsite_callee));
	assert_false(callsite_is_stub(*state, (uintptr_t)&seen_ret));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_indirect_register),
		cmocka_unit_test(test_indirect_memory),
		cmocka_unit_test(test_direct_reading_nowhere),
		cmocka_unit_test(test_not_call_sites),
		cmocka_unit_test(test_stub),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
