/*
 * test_shim_pool.c — unit tests for shim/pool.c, linked alone: size
 * classes and alignment, reuse of freed blocks, ownership by address,
 * the 64 KiB limit, many blocks of one class, the "no pool" state,
 * and the per-block records (writable, one per block, in block order).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shim/pool.h"

static void test_classes(void **state)
{
	static const size_t sizes[] = { 1, 16, 17, 100, 1000, 4096, 4097, 65536 };
	size_t i;

	(void)state;
	assert_int_equal(pool_init(), 0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *p = pool_alloc(sizes[i], 16);
		size_t u;

		assert_non_null(p);
		assert_true(pool_owns(p));
		u = pool_usable(p);
		assert_true(u >= sizes[i] && u < 2 * sizes[i] + 16);
		assert_int_equal((uintptr_t)p % u, 0); /* aligned to its size */
		memset(p, 0xab, u);
		pool_free(p);
	}
	assert_null(pool_alloc(65537, 16));
	assert_null(pool_alloc(16, (size_t)1 << 17));
	assert_false(pool_owns(&i));
	assert_false(pool_owns(NULL));
	pool_fini();
}

static void test_reuse_and_growth(void **state)
{
	enum { N = 40000 };
	static void *p[N];
	void *q;
	int i;

	(void)state;
	assert_int_equal(pool_init(), 0);
	for (i = 0; i < N; i++) { /* 40000 x 64 B: many pages of one class */
		p[i] = pool_alloc(50, 16);
		assert_non_null(p[i]);
		memset(p[i], i, 50);
		if (i > 0)
			assert_true(p[i] != p[i - 1]);
	}
	for (i = 0; i < N; i++)
		assert_int_equal(((unsigned char *)p[i])[49], (unsigned char)i);
	pool_free(p[123]);
	q = pool_alloc(64, 16);
	assert_ptr_equal(q, p[123]); /* last freed, first reused */
	q = pool_alloc(4000, 4096);
	assert_int_equal((uintptr_t)q % 4096, 0);
	pool_lock();
	pool_reset_lock(); /* as in a fork child */
	assert_non_null(pool_alloc(8, 16));
	pool_fini();
	assert_false(pool_owns(q));
	assert_null(pool_alloc(8, 16)); /* no pool */
}

static void test_meta(void **state)
{
	enum { N = 20000 };
	static void *p[N];
	struct pool_meta *m;
	uint32_t e;
	int i;

	(void)state;
	assert_int_equal(pool_init(), 0);
	for (i = 0; i < N; i++) { /* 16 B blocks: their records span several pages */
		p[i] = pool_alloc(16, 16);
		assert_non_null(p[i]);
		*pool_meta(p[i]) = (struct pool_meta){ i, pool_epoch, (uint64_t)i * 3 };
	}
	for (i = 0; i < N; i++) {
		m = pool_meta(p[i]);
		assert_int_equal(m->bucket, i);
		assert_int_equal(m->size, (uint64_t)i * 3);
		if (i > 0)
			assert_true(m == pool_meta(p[i - 1]) + 1);
	}
	m = pool_meta(pool_alloc(60000, 16)); /* largest class */
	m->size = 1;
	e = pool_epoch;
	pool_new_epoch();
	assert_int_equal(pool_epoch, e + 1);
	pool_fini();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_reuse_and_growth),
		cmocka_unit_test(test_meta),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
