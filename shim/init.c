/*
 * init.c — the shim's life cycle. The constructor only reads and checks
 * the environment and registers the fork handlers: a process that never
 * reaches a sample point (most short-lived ones) pays nothing more. The
 * first sampled allocation (or pthread_create) activates the shim: it
 * creates the segment and tables and warms the unwinder up, inside that
 * allocation, with syscalls only. A rejected setting, sampling off or a
 * malloc bound ahead of the shim's activates it at once, so that
 * cprof-attach can say so. The fork handlers give a child a segment of its
 * own that starts as a copy of its parent's live samples. Any failure
 * turns the shim into a pass-through: the program is never affected.
 * An activation from a lock function (shim_activate_quiet) makes all but
 * the unwinder's choice, which needs dlsym, and leaves that to the next
 * sampled allocation. Settings are read with secure_getenv: a setuid or
 * file-capability program (AT_SECURE) takes none of them from whoever ran
 * it, and keeps the defaults. Cost: in the constructor four secure_getenv calls and
 * pthread_atfork (bench/startup
 * measures the whole start); at activation memfd_create, a few mmaps and
 * the first unwind; per fork, in the child, a new memfd and a copy of the
 * used buckets.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "shim/blocks.h"
#include "shim/contend.h"
#include "shim/inject.h"
#include "shim/labels.h"
#include "shim/lockprof.h"
#include "shim/next.h"
#include "shim/pool.h"
#include "shim/segment.h"
#include "shim/shim.h"
#include "shim/stack.h"
#include "shim/table.h"
#include "shim/waiters.h"

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

/* 0 not yet, 1 under way, 2 done, 3 failed (shim_state is then SHIM_OFF). */
static int shim_active;
static uint64_t shim_buckets = SEG_DEFAULT_BUCKETS;
static struct seg_header shim_info; /* settings, allocator, state: for table_set_info */

/*
 * Before fork: let another thread finish resolving the allocator or
 * activating the shim, hold the leaf locks so that the child never
 * inherits one held by a thread that does not exist there, and raise the
 * guard so that the fork handlers that run after this one allocate
 * unsampled (they would otherwise wait for the locks held here).
 */
static void shim_fork_prepare(void)
{
	unsigned i;

	/* A resolution or activation under way elsewhere would never end in the child. */
	next_wait();
	for (i = 0; i < 10000 && __atomic_load_n(&shim_active, __ATOMIC_ACQUIRE) == 1; i++)
		sched_yield();
	shim_tls.busy++;
	table_fork_prepare();
	blocks_lock();
	pool_lock();
}

static void shim_fork_parent(void)
{
	pool_unlock();
	blocks_unlock();
	table_fork_parent();
	shim_tls.busy--;
}

/*
 * In the child (async-signal-safe: syscalls and copies, no lock, no
 * allocation): the parent's sampled blocks are the child's too, so the
 * pool records and the block table stay as they are, and the new segment
 * starts with the parent's buckets reduced to their live blocks. Reseeds
 * the PRNG so that parent and child do not draw the same intervals.
 */
static void shim_fork_child(void)
{
	pool_reset_lock();
	blocks_reset_lock();
	table_reset_lock(); /* also when inactive: prepare took it all the same */
	if (__atomic_load_n(&shim_active, __ATOMIC_ACQUIRE) == 1) {
		/* Half made by a thread that is not here (prepare waited in vain): off. */
		__atomic_store_n(&shim_active, 3, __ATOMIC_RELEASE);
		__atomic_store_n(&shim_state, SHIM_OFF, __ATOMIC_RELEASE);
	}
	if (shim_late && !__atomic_load_n(&inject_armed, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&shim_active, __ATOMIC_ACQUIRE) == 2) {
		/*
		 * A dormant injected shim: the parent's segment is not the
		 * child's, and the child needs one only when armed; the next
		 * arm activates afresh (no copy of buckets at every fork of a
		 * pre-forking server that was profiled once).
		 */
		labels_fini();
		blocks_fini();
		table_drop_child();
		__atomic_store_n(&shim_active, 0, __ATOMIC_RELEASE);
	}
	if (__atomic_load_n(&shim_active, __ATOMIC_ACQUIRE) == 2 && table_restart() != 0) {
		table_fini();
		blocks_fini();
		__atomic_store_n(&shim_active, 3, __ATOMIC_RELEASE);
		__atomic_store_n(&shim_state, SHIM_OFF, __ATOMIC_RELEASE);
	}
	labels_fork_child(); /* after table_restart: the child's own segment */
	inject_fork_child();
	waiters_fork_child(); /* the parent's waiters are not in the child */
	shim_tls.seeded = 0;
	shim_tls.left = 0;
	shim_tls.tid = 0;
	shim_tls.wseeded = 0;
	shim_tls.busy--;
}

/* Runs each lazily initialised path once before the sample that activated the shim. */
static void shim_warm_up(void)
{
	struct sample_rng r;
	volatile double w;

	sample_seed(&r, 1);
	w = sample_weight((uint64_t)sample_interval(&r, SAMPLE_DEFAULT_RATE), SAMPLE_DEFAULT_RATE);
	(void)w;
}

/*
 * The pool takes address space (pool.h): not under an address-space limit
 * (it would come out of the program's own), nor under strict overcommit
 * (MAP_NORESERVE is ignored there and it would be charged in full).
 */
static int shim_pool_allowed(void)
{
	struct rlimit as;
	char c = 0;
	int fd;

	if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur != RLIM_INFINITY)
		return 0;
	fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = 0;
		close(fd);
	}
	return c != '2';
}

/* 1 while the fallback unwinder is still to be chosen (activated from a lock function). */
static int shim_unwinder_pending;

/*
 * Creates what sampling needs. 1 when active; 0 when not (yet, or ever).
 * lookup: may call dlsym (the loader's lock); without it the unwinder's
 * choice is left to the next call with it.
 */
static int shim_activate_mode(int lookup)
{
	uintptr_t lo, hi;
	int expected = 0;

	if (!__atomic_compare_exchange_n(&shim_active, &expected, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (expected == 2 && lookup &&
		    __builtin_expect(__atomic_load_n(&shim_unwinder_pending, __ATOMIC_RELAXED), 0) &&
		    __atomic_exchange_n(&shim_unwinder_pending, 0, __ATOMIC_ACQ_REL)) {
			shim_tls.busy++;
			stack_pick_unwinder();
			shim_tls.busy--;
		}
		return expected == 2;
	}
	shim_tls.busy++;
	if (!next_resolve())
		goto err;
	snprintf(shim_info.allocator, sizeof(shim_info.allocator), "%s",
		 strrchr(next_object(), '/') ? strrchr(next_object(), '/') + 1 : next_object());
	if (next_kind() == NEXT_PASS) {
		/* A segment that only says why, so that cprof-attach can tell. */
		shim_info.state = SEG_STATE_OFF;
		snprintf(shim_info.note, sizeof(shim_info.note), "%s", next_why());
		table_set_info(&shim_info);
		(void)table_init(shim_rate, 1);
		goto err;
	}
	if (next_kind() == NEXT_GLIBC && shim_rate != 0 && (!shim_pool_allowed() || pool_init() != 0))
		shim_info.flags |= SEG_FLAG_NO_POOL; /* sampled blocks come from glibc's memalign */
	table_set_info(&shim_info);
	if (stack_object_range((const void *)shim_activate, &lo, &hi) != 0)
		goto err;
	if (table_init(shim_rate, (uint32_t)shim_buckets) != 0)
		goto err;
	if (blocks_init(SHIM_BLOCKS_MIN_LOG2, SHIM_BLOCKS_MAX_LOG2) != 0)
		goto err;
	(void)labels_init(); /* without its index, labels are off and the rest works */
	if (lookup)
		stack_pick_unwinder();
	else
		__atomic_store_n(&shim_unwinder_pending, 1, __ATOMIC_RELEASE);
	stack_init_range(lo, hi);
	shim_warm_up();
	__atomic_store_n(&shim_active, 2, __ATOMIC_RELEASE);
	shim_tls.busy--;
	return 1;

err:
	labels_fini();
	blocks_fini();
	pool_fini();
	if (next_kind() != NEXT_PASS)
		table_fini();
	__atomic_store_n(&shim_state, SHIM_OFF, __ATOMIC_RELEASE);
	__atomic_store_n(&shim_active, 3, __ATOMIC_RELEASE);
	shim_tls.busy--;
	return 0;
}

int shim_activate(void)
{
	return shim_activate_mode(1);
}

int shim_activate_quiet(void)
{
	int a = __atomic_load_n(&shim_active, __ATOMIC_ACQUIRE);

	if (a == 2)
		return 1;
	/* Resolving the allocator calls dlsym: leave the activation to an allocation. */
	if (a != 0 || !next_resolved())
		return 0;
	return shim_activate_mode(0);
}

/* A setting's parser: sample_parse_size or contend_parse_ns. */
typedef int shim_parse_fn(const char *, uint64_t, uint64_t *);

/*
 * Reads variable name with parse; a rejected value leaves dflt in force
 * and is noted for the segment (and for stderr under CPROF_DEBUG).
 */
static uint64_t shim_setting(const char *name, uint64_t dflt, uint64_t max, shim_parse_fn *parse)
{
	const char *v = secure_getenv(name), *dbg;
	struct seg_setting *s;
	uint64_t out = dflt;
	int rc;

	if (v == NULL || *v == '\0')
		return dflt; /* unset, or set to nothing: the default, no complaint */
	rc = parse(v, max, &out);
	if (rc == SAMPLE_PARSE_OK)
		return out;
	if (shim_info.nsettings < SEG_MAX_SETTINGS) {
		s = &shim_info.settings[shim_info.nsettings++];
		snprintf(s->name, sizeof(s->name), "%s", name);
		snprintf(s->value, sizeof(s->value), "%s", v);
		s->problem = (uint32_t)rc;
		s->used = dflt;
	}
	dbg = secure_getenv("CPROF_DEBUG");
	if (dbg != NULL && *dbg != '\0' && strcmp(dbg, "0") != 0) {
		char line[192];
		int n = snprintf(line, sizeof(line), "libcprof.so: %s=%.48s in %d is %s; using %llu\n",
				 name, v, (int)getpid(),
				 rc == SAMPLE_PARSE_NEGATIVE ? "negative" :
				 rc == SAMPLE_PARSE_TOO_LARGE ? "too large" : "not a number",
				 (unsigned long long)dflt);

		if (n > 0)
			(void)!write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	}
	return dflt;
}

void shim_init(void)
{
	int expected = SHIM_INIT;

	/* INIT -> STARTING first, so a concurrent or nested caller sees "not ready". */
	if (!__atomic_compare_exchange_n(&shim_state, &expected, SHIM_STARTING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	shim_tls.busy++;
	_Static_assert(SAMPLE_DEFAULT_RATE == SEG_DEFAULT_RATE &&
			       SAMPLE_PARSE_NOT_A_NUMBER == SEG_SETTING_NOT_A_NUMBER &&
			       SAMPLE_PARSE_NEGATIVE == SEG_SETTING_NEGATIVE &&
			       SAMPLE_PARSE_TOO_LARGE == SEG_SETTING_TOO_LARGE,
		       "sample.h and segment.h agree");
	shim_rate = shim_setting("CPROF_SAMPLE_RATE", SAMPLE_DEFAULT_RATE, (uint64_t)1 << 40,
				 sample_parse_size);
	shim_buckets = shim_setting("CPROF_MAX_BUCKETS", SEG_DEFAULT_BUCKETS, SEG_MAX_BUCKETS,
				    sample_parse_size);
	if (shim_buckets == 0)
		shim_buckets = SEG_DEFAULT_BUCKETS;
	/* At most an hour, and 1 in 2^30: beyond, nothing would ever be recorded. */
	shim_info.block_rate = shim_setting("CPROF_BLOCK_RATE", SEG_DEFAULT_BLOCK_RATE,
					    3600000000000ull, contend_parse_ns);
	shim_info.mutex_fraction = shim_setting("CPROF_MUTEX_FRACTION", SEG_DEFAULT_MUTEX_FRACTION,
						(uint64_t)1 << 30, sample_parse_size);
	/* Registered now: pthread_atfork locks what fork holds, so never from inside malloc. */
	if (pthread_atfork(shim_fork_prepare, shim_fork_parent, shim_fork_child) != 0) {
		__atomic_store_n(&shim_state, SHIM_OFF, __ATOMIC_RELEASE);
		shim_tls.busy--;
		return;
	}
	lockprof_block_rate = shim_info.block_rate;
	lockprof_mutex_fraction = shim_info.mutex_fraction;
	__atomic_store_n(&shim_state, SHIM_READY, __ATOMIC_RELEASE);
	shim_tls.busy--;
	/*
	 * Something to report: a segment now, so that cprof-attach can say it
	 * (a rejected setting, sampling off). So too when the program's malloc
	 * binds ahead of ours (one compare:
	 * the GOT's malloc against our own), as no sample would ever come.
	 */
	if ((void *)malloc != (void *)shim_own_malloc && inject_loaded_late()) {
		/* dlopen'd (cprof-attach --inject): nothing until cprof_inject_arm (inject.h). */
		__atomic_store_n(&shim_late, 1, __ATOMIC_RELEASE);
		return;
	}
	if (shim_info.nsettings > 0 || shim_rate == 0 || (void *)malloc != (void *)shim_own_malloc)
		(void)shim_activate();
}

__attribute__((constructor)) static void shim_constructor(void)
{
	shim_init();
}
