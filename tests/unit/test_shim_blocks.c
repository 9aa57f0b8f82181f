/*
 * test_shim_blocks.c — unit tests for shim/blocks.c, linked alone: the
 * sampled-block table against a plain reference array under random
 * inserts and removes (exercising backward-shift deletion and growth),
 * replacement of an existing key, the hard cap, the lock-free filter's
 * "absent" answers, and restart after fork.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shim/blocks.h"

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_basic(void **state)
{
	uint64_t size;
	int32_t b;

	(void)state;
	assert_int_equal(blocks_init(4, 8), 0);
	assert_int_equal(blocks_contains(0x10000), 0);
	assert_int_equal(blocks_remove(0x10000, &size, &b), 0);
	assert_int_equal(blocks_insert(0x10000, 100, 7), 0);
	assert_int_equal(blocks_contains(0x10000), 1);
	assert_int_equal(blocks_insert(0x10000, 200, 9), 0); /* replaces */
	assert_int_equal(blocks_live(), 1);
	assert_int_equal(blocks_remove(0x10000, &size, &b), 1);
	assert_int_equal(size, 200);
	assert_int_equal(b, 9);
	assert_int_equal(blocks_remove(0x10000, &size, &b), 0);
	assert_int_equal(blocks_live(), 0);
	assert_int_equal(blocks_insert(0, 1, 1), -1);
	blocks_fini();
	assert_int_equal(blocks_insert(0x10000, 1, 1), -1); /* off */
	assert_int_equal(blocks_contains(0x10000), 0);
}

static void test_random_against_reference(void **state)
{
	enum { N = 3000 };
	static uint64_t key[N];
	static int present[N];
	uint64_t s = 12345, size;
	int32_t b;
	long step;
	int i, live = 0;

	(void)state;
	assert_int_equal(blocks_init(4, 16), 0);
	for (i = 0; i < N; i++) /* page-aligned, clustered like a heap, some 4 GiB apart */
		key[i] = ((uint64_t)(i % 7) << 32) + 0x7f0000000000ull + (uint64_t)i * 4096 * 3;
	for (step = 0; step < 400000; step++) {
		i = (int)(rnd(&s) % N);
		if (present[i]) {
			assert_int_equal(blocks_remove(key[i], &size, &b), 1);
			assert_int_equal(size, key[i] >> 12);
			assert_int_equal(b, i);
			present[i] = 0;
			live--;
		} else {
			assert_int_equal(blocks_contains(key[i]), 0);
			assert_int_equal(blocks_insert(key[i], key[i] >> 12, i), 0);
			present[i] = 1;
			live++;
		}
		assert_int_equal(blocks_live(), (uint64_t)live);
	}
	for (i = 0; i < N; i++)
		assert_int_equal(blocks_contains(key[i]), present[i]);
	blocks_fini();
}

static void test_cap(void **state)
{
	uint64_t p, size;
	int32_t b;
	int n = 0;

	(void)state;
	/* At most 2^6 slots, at most half full: 32 entries. */
	assert_int_equal(blocks_init(4, 6), 0);
	for (p = 4096; p < 4096 * 100; p += 4096)
		if (blocks_insert(p, 1, 1) == 0)
			n++;
	assert_int_equal(n, 32);
	assert_int_equal(blocks_live(), 32);
	for (p = 4096; p <= 4096 * 32; p += 4096)
		assert_int_equal(blocks_remove(p, &size, &b), 1);
	assert_int_equal(blocks_insert(4096 * 200, 1, 1), 0);
	blocks_fini();
	assert_int_equal(blocks_init(3, 6), -1);
	assert_int_equal(blocks_init(8, 6), -1);
	assert_int_equal(blocks_init(4, 27), -1);
}

/* A fork child keeps its parent's entries (they are its blocks too); only the lock is reset. */
static void test_fork_child(void **state)
{
	uint64_t size;
	int32_t b;

	(void)state;
	assert_int_equal(blocks_init(4, 10), 0);
	assert_int_equal(blocks_insert(0x20000, 5, 3), 0);
	blocks_lock(); /* as a fork's prepare handler leaves it in the child */
	blocks_reset_lock();
	assert_int_equal(blocks_live(), 1);
	assert_int_equal(blocks_remove(0x20000, &size, &b), 1);
	assert_int_equal(size, 5);
	assert_int_equal(b, 3);
	assert_int_equal(blocks_insert(0x20000, 5, 3), 0); /* the lock is free again */
	blocks_fini();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_random_against_reference),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_fork_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
