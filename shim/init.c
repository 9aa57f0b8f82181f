/*
 * init.c — the shim's life cycle: the constructor that reads the
 * environment, creates the segment and tables and warms every lazily
 * initialised path up (so that the first sample inside malloc binds no
 * symbol and initialises nothing), the fork handlers that give a child its
 * own fresh segment, and the few symbols that must come from dlsym. Any
 * failure turns the shim into a pass-through: the program is never
 * affected. Cost: paid once at load (~100 us, mostly memfd_create and the
 * first unwind) and once per fork in the child (a new memfd).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "shim/blocks.h"
#include "shim/next.h"
#include "shim/pool.h"
#include "shim/segment.h"
#include "shim/shim.h"
#include "shim/stack.h"
#include "shim/table.h"

/*
 * The block table starts at 2^12 slots (96 KiB, populated) and may double
 * up to 2^22 (96 MiB): up to 2^21 live sampled blocks, 1 TiB of live heap
 * at the default rate.
 */
#define SHIM_BLOCKS_MIN_LOG2 12
#define SHIM_BLOCKS_MAX_LOG2 22

__thread struct shim_thread shim_tls __attribute__((tls_model("initial-exec")));
int shim_state;
uint64_t shim_rate = SAMPLE_DEFAULT_RATE;

static shim_pthread_create_fn shim_create_fn;

/* dlsym(RTLD_NEXT, name) with the recursion guard held (dlsym may allocate). */
static void *shim_lookup(const char *name)
{
	void *f;

	shim_tls.busy++;
	f = dlsym(RTLD_NEXT, name);
	shim_tls.busy--;
	return f;
}

shim_pthread_create_fn shim_real_pthread_create(void)
{
	shim_pthread_create_fn f = __atomic_load_n(&shim_create_fn, __ATOMIC_ACQUIRE);

	if (f == NULL) {
		f = (shim_pthread_create_fn)shim_lookup("pthread_create");
		if (f != NULL)
			__atomic_store_n(&shim_create_fn, f, __ATOMIC_RELEASE);
	}
	return f;
}

/*
 * Before fork: hold both leaf locks so that the child never inherits one
 * held by a thread that does not exist there, and raise the guard so that
 * the fork handlers that run after this one allocate unsampled (they would
 * otherwise wait for the locks held here).
 */
static void shim_fork_prepare(void)
{
	shim_tls.busy++;
	table_lock();
	blocks_lock();
	pool_lock();
}

static void shim_fork_parent(void)
{
	pool_unlock();
	blocks_unlock();
	table_unlock();
	shim_tls.busy--;
}

/*
 * In the child: forget the parent's sampled blocks (they stay valid heap
 * or pool blocks; freeing one is now an unsampled free), make a segment of its own
 * and unmap the parent's, and reseed the PRNG so that parent and child do
 * not draw the same intervals.
 */
static void shim_fork_child(void)
{
	pool_reset_lock(); /* the parent's pool blocks stay valid in the child... */
	pool_new_epoch();  /* ...but their records no longer count */
	if (__atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) == SHIM_READY) {
		if (blocks_restart() != 0 || table_restart() != 0) {
			table_fini();
			blocks_fini();
			__atomic_store_n(&shim_state, SHIM_OFF, __ATOMIC_RELEASE);
		}
	}
	shim_tls.seeded = 0;
	shim_tls.left = 0;
	shim_tls.busy--;
}

/* Runs each lazily bound or lazily initialised path once, outside malloc. */
static void shim_warm_up(void)
{
	struct sample_rng r;
	volatile double w;
	void *p;

	sample_seed(&r, 1);
	w = sample_weight((uint64_t)sample_interval(&r, SAMPLE_DEFAULT_RATE), SAMPLE_DEFAULT_RATE);
	(void)w;
	p = shim_next.memalign(SHIM_PAGE, 64);
	if (p != NULL) {
		memset(p, 0, 64);
		(void)shim_next.usable(p);
		shim_next.free(p);
	}
}

void shim_init(void)
{
	uintptr_t lo, hi;
	uint64_t buckets;
	int expected = SHIM_INIT;

	/* INIT -> STARTING first, so a concurrent or nested caller sees "not ready". */
	if (!__atomic_compare_exchange_n(&shim_state, &expected, SHIM_STARTING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	shim_tls.busy++;
	shim_rate = sample_parse_u64(getenv("CPROF_SAMPLE_RATE"), SAMPLE_DEFAULT_RATE,
				     (uint64_t)1 << 40);
	/* 0 or not a number: the default; more than the maximum: the maximum. */
	buckets = sample_parse_u64(getenv("CPROF_MAX_BUCKETS"), SEG_DEFAULT_BUCKETS, UINT64_MAX);
	if (buckets == 0)
		buckets = SEG_DEFAULT_BUCKETS;
	if (buckets > SEG_MAX_BUCKETS)
		buckets = SEG_MAX_BUCKETS;
	if (!next_resolve() || next_kind() == NEXT_PASS || shim_real_pthread_create() == NULL)
		goto err;
	if (stack_object_range((const void *)shim_init, &lo, &hi) != 0)
		goto err;
	if (table_init(shim_rate, (uint32_t)buckets) != 0)
		goto err;
	if (blocks_init(SHIM_BLOCKS_MIN_LOG2, SHIM_BLOCKS_MAX_LOG2) != 0)
		goto err;
	(void)pool_init(); /* without it, sampled blocks come from glibc's memalign */
	stack_init(lo, hi);
	shim_warm_up();
	if (pthread_atfork(shim_fork_prepare, shim_fork_parent, shim_fork_child) != 0)
		goto err;
	__atomic_store_n(&shim_state, SHIM_READY, __ATOMIC_RELEASE);
	shim_tls.busy--;
	return;

err:
	blocks_fini();
	table_fini();
	__atomic_store_n(&shim_state, SHIM_OFF, __ATOMIC_RELEASE);
	shim_tls.busy--;
}

__attribute__((constructor)) static void shim_constructor(void)
{
	shim_init();
}
