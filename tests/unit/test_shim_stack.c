/*
 * test_shim_stack.c — unit tests for shim/stack.c, linked alone: the
 * shim's own cached CFI walk must give exactly the return addresses that
 * libgcc's _Unwind_Backtrace gives, for plain calls, deep recursion
 * (truncated at 64), frames inside libc (a qsort comparator), frames whose
 * CFA is rbp-based (a variable-length array), a second thread (ends at
 * clone3), and repeated walks served from the rule cache; inside a signal
 * handler it must decline (the signal frame is not modelled) so that
 * stack_capture falls back to libgcc and still reaches main.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shim/segment.h"
#include "shim/stack.h"

struct both {
	uint64_t fast[SEG_MAX_FRAMES], slow[SEG_MAX_FRAMES];
	uint32_t nfast, nslow, ffast, fslow;
};

/* Walks the same stack both ways. fast[0] is in stack_capture_fast, fast[1] and slow[0] here. */
static __attribute__((noinline)) void capture_both(struct both *b)
{
	struct stack_walk w = { b->slow, 0, SEG_MAX_FRAMES, 0, 0, stack_unwinder };

	b->nfast = stack_capture_fast(b->fast, SEG_MAX_FRAMES, &b->ffast);
	(void)_Unwind_Backtrace(stack_step, &w);
	b->nslow = w.n;
	b->fslow = w.flags;
	__asm__ volatile("" ::: "memory");
}

/* The walks agree from the caller of capture_both outwards. */
static void check_same(const struct both *b)
{
	uint32_t i;

	assert_true(b->nfast != UINT32_MAX);
	assert_true(b->nfast >= 3);
	for (i = 2; i < b->nfast && i - 1 < b->nslow; i++)
		assert_true(b->fast[i] == b->slow[i - 1]);
	/* libgcc sees one frame less at the inner end; both may be cut at 64. */
	if (!b->ffast && !b->fslow)
		assert_int_equal(b->nfast, b->nslow + 1);
}

static void test_plain(void **state)
{
	struct both b;
	int i;

	(void)state;
	for (i = 0; i < 3; i++) { /* the second and third walks come from the cache */
		capture_both(&b);
		check_same(&b);
	}
}

static __attribute__((noinline)) int recurse(int d, struct both *b)
{
	int r;

	if (d == 0) {
		capture_both(b);
		return 0;
	}
	r = recurse(d - 1, b);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static void test_deep(void **state)
{
	struct both b;

	(void)state;
	recurse(100, &b);
	assert_int_equal(b.nfast, SEG_MAX_FRAMES);
	assert_int_equal(b.ffast, SEG_BUCKET_TRUNCATED);
	assert_int_equal(b.fslow, SEG_BUCKET_TRUNCATED);
	check_same(&b);
	recurse(10, &b);
	assert_int_equal(b.ffast, 0);
	check_same(&b);
}

static struct both *qsort_both;

static int compare(const void *x, const void *y)
{
	if (qsort_both != NULL) {
		capture_both(qsort_both);
		qsort_both = NULL;
	}
	return *(const int *)x - *(const int *)y;
}

static void test_through_libc(void **state)
{
	int v[64], i;
	struct both b;

	(void)state;
	for (i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	qsort_both = &b;
	qsort(v, 64, sizeof(v[0]), compare);
	check_same(&b);
}

static __attribute__((noinline)) int with_vla(int n, struct both *b)
{
	volatile char buf[n]; /* CFA is rbp-based here */

	buf[0] = 1;
	capture_both(b);
	return buf[0] + n;
}

static void test_rbp_frame(void **state)
{
	struct both b;

	(void)state;
	with_vla(100, &b);
	check_same(&b);
	with_vla(5000, &b);
	check_same(&b);
}

static void *thread_main(void *arg)
{
	capture_both(arg);
	return NULL;
}

static void test_thread(void **state)
{
	struct both b;
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, thread_main, &b), 0);
	pthread_join(t, NULL);
	check_same(&b);
	assert_true(b.nfast <= 6); /* capture, thread_main, start_thread, clone3 */
}

static volatile uint32_t sig_fast, sig_n;
static uint64_t sig_frames[SEG_MAX_FRAMES];

static void handler(int sig)
{
	uint64_t f[SEG_MAX_FRAMES];
	uint32_t flags, n;

	(void)sig;
	sig_fast = stack_capture_fast(f, SEG_MAX_FRAMES, &flags);
	n = stack_capture(sig_frames, SEG_MAX_FRAMES, &flags);
	sig_n = n;
}

static uint64_t raise_return; /* where raise_usr1 returns to in its caller */

static __attribute__((noinline)) void raise_usr1(void)
{
	raise_return = (uint64_t)(uintptr_t)__builtin_return_address(0);
	raise(SIGUSR1);
	__asm__ volatile("" ::: "memory");
}

static void test_signal_falls_back(void **state)
{
	struct sigaction sa;
	uint32_t i, found = 0;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	raise_usr1();
	assert_true(sig_fast == UINT32_MAX);
	/* The fallback walks through the signal frame into raise_usr1's caller. */
	for (i = 0; i < sig_n; i++)
		found += sig_frames[i] == raise_return;
	assert_int_equal(found, 1);
}

static void test_skip_range(void **state)
{
	uint64_t f[SEG_MAX_FRAMES];
	uint32_t flags, n;
	uintptr_t lo, hi;

	(void)state;
	/* Skipping this whole executable leaves libc's frames only. */
	assert_int_equal(stack_object_range((const void *)test_skip_range, &lo, &hi), 0);
	assert_true(lo <= (uintptr_t)test_skip_range && (uintptr_t)test_skip_range < hi);
	stack_init(lo, hi);
	n = stack_capture(f, SEG_MAX_FRAMES, &flags);
	stack_init(0, 0);
	assert_true(n >= 1);
	assert_true(f[0] < lo || f[0] >= hi);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_deep),
		cmocka_unit_test(test_through_libc),
		cmocka_unit_test(test_rbp_frame),
		cmocka_unit_test(test_thread),
		cmocka_unit_test(test_signal_falls_back),
		cmocka_unit_test(test_skip_range),
	};

	stack_init(0, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
