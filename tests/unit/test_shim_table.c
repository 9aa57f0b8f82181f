/*
 * test_shim_table.c — unit tests for shim/table.c, linked alone: the
 * segment header as segment.h specifies it, the memfd mapping name the
 * reader looks for, bucket identity (kind, flags, frames), the hard cap
 * and header.dropped, the counters, restart after fork, and the sequence
 * lock under two writers and a reader that copies the bucket word by word
 * in address order (as process_vm_readv does) and must never accept torn
 * counters.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim/table.h"

static int maps_count(const char *needle)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

static void test_header(void **state)
{
	const struct seg_header *h;

	(void)state;
	assert_int_equal(table_init(65536, 4), 0);
	h = table_segment();
	assert_non_null(h);
	assert_memory_equal(h->magic, SEG_MAGIC, 8);
	assert_int_equal(h->version, SEG_VERSION);
	assert_int_equal(h->header_size, sizeof(struct seg_header));
	assert_int_equal(h->bucket_size, sizeof(struct seg_bucket));
	assert_int_equal(h->max_frames, SEG_MAX_FRAMES);
	assert_int_equal(h->pid, (uint32_t)getpid());
	assert_int_equal(h->sample_rate, 65536);
	assert_int_equal(h->bucket_cap, 4);
	assert_int_equal(h->bucket_count, 0);
	assert_true(h->bucket_off >= sizeof(struct seg_header) && h->bucket_off % 8 == 0);
	assert_true(h->size >= h->bucket_off + 4 * sizeof(struct seg_bucket));
	assert_true(h->created_ns > 0);
	assert_int_equal(maps_count("/memfd:" SEG_NAME " (deleted)"), 1);
	table_fini();
	assert_null(table_segment());
	assert_int_equal(maps_count("/memfd:" SEG_NAME), 0);
}

static void test_buckets(void **state)
{
	const struct seg_header *h;
	const struct seg_bucket *k;
	uint64_t f1[3] = { 0x401000, 0x402000, 0x403000 }, f2[3] = { 0x401000, 0x402000, 0x404000 };
	int32_t a;

	(void)state;
	assert_int_equal(table_init(1000, 4), 0);
	h = table_segment();
	a = table_bucket(SEG_KIND_ALLOC, 0, f1, 3);
	assert_int_equal(a, 0);
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f1, 3), a);
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f1, 2), 1);        /* prefix: another stack */
	assert_int_equal(table_bucket(SEG_KIND_THREAD, 0, f1, 3), 2);       /* another kind */
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, SEG_BUCKET_TRUNCATED, f1, 3), 3);
	assert_int_equal(h->bucket_count, 4);
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f2, 3), -1);       /* full */
	assert_int_equal(h->dropped, 1);
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f1, 3), a);        /* existing still found */
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f1, SEG_MAX_FRAMES + 1), -1);

	k = (const struct seg_bucket *)((const char *)h + h->bucket_off);
	assert_int_equal(k[0].kind, SEG_KIND_ALLOC);
	assert_int_equal(k[0].nframes, 3);
	assert_memory_equal(k[0].frames, f1, sizeof(f1));
	assert_int_equal(k[0].frames[3], 0);
	assert_int_equal(k[3].flags, SEG_BUCKET_TRUNCATED);

	table_add(a, 0, 100, 2.5);
	table_add(a, 0, 300, 1.5);
	table_add(a, 1, 100, 2.5);
	assert_int_equal(k[0].alloc_samples, 2);
	assert_int_equal(k[0].alloc_sampled_bytes, 400);
	assert_true(k[0].alloc_objects == 4.0);
	assert_true(k[0].alloc_bytes == 700.0);
	assert_int_equal(k[0].free_samples, 1);
	assert_int_equal(k[0].free_sampled_bytes, 100);
	assert_true(k[0].free_objects == 2.5);
	assert_true(k[0].free_bytes == 250.0);
	assert_int_equal(k[0].seq, 6);
	assert_int_equal(k[0].seq_end, 6);
	table_add(7, 0, 1, 1.0); /* unpublished: ignored */
	table_add(-1, 0, 1, 1.0);
	table_count_thread();
	table_count_dropped();
	assert_int_equal(h->threads_created, 1);
	assert_int_equal(h->dropped, 2); /* the too-deep stack is refused, not dropped */
	table_fini();
}

/*
 * A fork child's segment: its own memfd, the parent's buckets (as
 * table_lock saw them) with the same numbers, each reduced to its live
 * blocks; thread buckets empty; the lock free again.
 */
static void test_restart(void **state)
{
	const struct seg_header *h;
	const struct seg_bucket *k;
	struct seg_header info = { 0 };
	uint64_t f[1] = { 0x401000 }, g[1] = { 0x402000 }, t[1] = { 0x403000 };

	(void)state;
	info.nsettings = 1;
	snprintf(info.settings[0].name, sizeof(info.settings[0].name), "CPROF_SAMPLE_RATE");
	snprintf(info.allocator, sizeof(info.allocator), "libc.so.6");
	table_set_info(&info);
	assert_int_equal(table_init(1000, 8), 0);
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f, 1), 0);
	assert_int_equal(table_bucket(SEG_KIND_THREAD, 0, t, 1), 1);
	table_add(0, 0, 100, 2.0);
	table_add(0, 0, 100, 2.0);
	table_add(0, 1, 100, 2.0);
	table_add(1, 0, 0, 1.0);
	table_lock(); /* as the fork prepare handler leaves it in the child */
	assert_int_equal(table_restart(), 0);
	h = table_segment();
	assert_non_null(h);
	assert_int_equal(h->bucket_count, 2);
	assert_int_equal(h->inherited, 2);
	assert_int_equal(h->parent_pid, getpid());
	assert_int_equal(h->bucket_cap, 8);
	assert_int_equal(h->sample_rate, 1000);
	assert_int_equal(h->nsettings, 1);
	assert_string_equal(h->allocator, "libc.so.6");
	assert_int_equal(maps_count("/memfd:" SEG_NAME), 1); /* the old one is gone */
	k = (const struct seg_bucket *)((const char *)h + h->bucket_off);
	assert_int_equal(k[0].alloc_samples, 1);
	assert_int_equal(k[0].alloc_sampled_bytes, 100);
	assert_true(k[0].alloc_objects == 2.0 && k[0].alloc_bytes == 200.0);
	assert_int_equal(k[0].free_samples, 0);
	assert_int_equal(k[0].frames[0], 0x401000);
	assert_int_equal(k[1].kind, SEG_KIND_THREAD);
	assert_int_equal(k[1].alloc_samples, 0);
	/* Same numbers: the inherited index still finds them; the lock is free again. */
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f, 1), 0);
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, g, 1), 2);
	table_add(0, 1, 100, 2.0); /* the child frees the inherited block */
	assert_true(k[0].alloc_bytes - k[0].free_bytes == 0.0);
	table_fini();
	assert_int_equal(table_restart(), -1);
	memset(&info, 0, sizeof(info));
	table_set_info(&info);
}

/* BLOCK and MUTEX buckets: their own counters, the rates, and empty after a fork. */
static void test_waits(void **state)
{
	const struct seg_header *h;
	const struct seg_bucket *k;
	struct seg_header info = { 0 };
	uint64_t f[2] = { 0x401000, 0x402000 };

	(void)state;
	info.block_rate = 10000;
	info.mutex_fraction = 10;
	table_set_info(&info);
	assert_int_equal(table_init(1000, 8), 0);
	h = table_segment();
	assert_int_equal(h->block_rate, 10000);
	assert_int_equal(h->mutex_fraction, 10);
	/* The same stack is a different bucket in each kind. */
	assert_int_equal(table_bucket(SEG_KIND_BLOCK, 0, f, 2), 0);
	assert_int_equal(table_bucket(SEG_KIND_MUTEX, 0, f, 2), 1);
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f, 2), 2);
	table_add_wait(0, 1, 2000, 5.0, 10000.0);
	table_add_wait(0, 1, 50000, 1.0, 50000.0);
	table_add_wait(1, 1, 3000, 10.0, 30000.0);
	table_add_wait(1, 0, 100, 0.0, 1000.0); /* a remainder: delay, no contention */
	table_add_wait(7, 1, 1, 1.0, 1.0);      /* no such bucket: ignored */
	table_count_untracked();
	k = (const struct seg_bucket *)((const char *)h + h->bucket_off);
	assert_int_equal(k[0].kind, SEG_KIND_BLOCK);
	assert_int_equal(k[0].wait.events, 2);
	assert_int_equal(k[0].wait.event_ns, 52000);
	assert_true(k[0].wait.contentions == 6.0 && k[0].wait.delay_ns == 60000.0);
	assert_int_equal(k[0].seq, 4);
	assert_int_equal(k[0].seq_end, 4);
	assert_int_equal(k[1].wait.events, 1);
	assert_int_equal(k[1].wait.event_ns, 3100);
	assert_true(k[1].wait.contentions == 10.0 && k[1].wait.delay_ns == 31000.0);
	assert_true(k[1].wait.reserved[0] == 0 && k[1].wait.reserved_d[1] == 0);
	assert_int_equal(h->waits_untracked, 1);
	/* A fork child's block and mutex buckets start empty, its rates stay. */
	table_lock();
	assert_int_equal(table_restart(), 0);
	h = table_segment();
	k = (const struct seg_bucket *)((const char *)h + h->bucket_off);
	assert_int_equal(h->bucket_count, 3);
	assert_int_equal(h->block_rate, 10000);
	assert_int_equal(h->waits_untracked, 0);
	assert_int_equal(k[0].kind, SEG_KIND_BLOCK);
	assert_int_equal(k[0].wait.events, 0);
	assert_true(k[0].wait.delay_ns == 0.0);
	assert_int_equal(k[1].kind, SEG_KIND_MUTEX);
	assert_true(k[1].wait.contentions == 0.0);
	assert_int_equal(table_bucket(SEG_KIND_MUTEX, 0, f, 2), 1);
	table_fini();
	memset(&info, 0, sizeof(info));
	table_set_info(&info);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * After a fork the parent changes no counter until the child has copied
 * the buckets (fork_copied), and waits 10 ms at most for a child that
 * never does; once.
 */
static void test_fork_wait(void **state)
{
	const struct seg_header *h;
	uint64_t f[1] = { 0x401000 };
	double t0, waited;

	(void)state;
	assert_int_equal(table_init(1000, 8), 0);
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f, 1), 0);
	table_fork_prepare();
	table_fork_parent();
	h = table_segment();
	assert_int_equal(h->fork_started, 1);
	assert_int_equal(h->fork_copied, 0);
	t0 = mono_s();
	table_add(0, 0, 1, 1.0);
	waited = mono_s() - t0;
	assert_true(waited >= 0.009 && waited < 1.0);
	t0 = mono_s();
	table_add(0, 0, 1, 1.0);
	assert_true(mono_s() - t0 < 0.005); /* once only */
	/* A child that copied: no wait at all. */
	table_fork_prepare();
	table_fork_parent();
	((struct seg_header *)h)->fork_copied = 2;
	t0 = mono_s();
	table_add(0, 0, 1, 1.0);
	assert_true(mono_s() - t0 < 0.005);
	table_fini();
}

#define WRITES 200000
static volatile int reader_stop;
static uint64_t reader_whole, reader_torn_accepted;

static void *writer(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < WRITES; i++)
		table_add(0, 0, 100, 2.0);
	return NULL;
}

static void *reader(void *arg)
{
	const volatile uint64_t *src = arg;
	uint64_t w[sizeof(struct seg_bucket) / 8];
	struct seg_bucket b;
	size_t i;

	do { /* at least once, however late this thread runs */
		for (i = 0; i < sizeof(w) / 8; i++) /* address order, one word at a time */
			w[i] = src[i];
		memcpy(&b, w, sizeof(b));
		if (b.seq != b.seq_end || (b.seq & 1))
			continue;
		reader_whole++;
		if (b.alloc_sampled_bytes != 100 * b.alloc_samples ||
		    b.alloc_objects != 2.0 * (double)b.alloc_samples ||
		    b.alloc_bytes != 200.0 * (double)b.alloc_samples)
			reader_torn_accepted++;
	} while (!reader_stop);
	return NULL;
}

static void test_seqlock(void **state)
{
	const struct seg_header *h;
	const struct seg_bucket *k;
	uint64_t f[1] = { 0x401000 };
	pthread_t w1, w2, r;

	(void)state;
	assert_int_equal(table_init(1000, 8), 0);
	h = table_segment();
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f, 1), 0);
	k = (const struct seg_bucket *)((const char *)h + h->bucket_off);
	assert_int_equal(pthread_create(&r, NULL, reader, (void *)k), 0);
	assert_int_equal(pthread_create(&w1, NULL, writer, NULL), 0);
	assert_int_equal(pthread_create(&w2, NULL, writer, NULL), 0);
	pthread_join(w1, NULL);
	pthread_join(w2, NULL);
	reader_stop = 1;
	pthread_join(r, NULL);
	assert_int_equal(k->alloc_samples, 2 * WRITES); /* writers excluded each other */
	assert_true(k->alloc_objects == 4.0 * WRITES);
	assert_int_equal(k->seq, 4 * WRITES);
	assert_int_equal(k->seq_end, 4 * WRITES);
	assert_true(reader_whole > 0);
	assert_int_equal(reader_torn_accepted, 0);
	table_fini();
}

/*
 * The shared header scribbled over from outside: new buckets, counter
 * changes and a fork child's copy go where the shim's own layout and
 * counts say, not where the header now says.
 */
static void test_header_scribbled(void **state)
{
	struct seg_header *h, saved;
	const struct seg_bucket *k;
	uint64_t f[1] = { 0x401000 }, g[1] = { 0x402000 };

	(void)state;
	assert_int_equal(table_init(1000, 8), 0);
	h = (struct seg_header *)table_segment();
	saved = *h;
	k = (const struct seg_bucket *)((const char *)h + saved.bucket_off);
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f, 1), 0);
	h->bucket_off = UINT64_MAX / 2;
	h->bucket_cap = UINT64_MAX;
	h->bucket_count = 0; /* the next bucket would overwrite bucket 0 */
	h->labelset_off = 1ull << 40;
	h->labelset_cap = UINT64_MAX;
	h->labelset_count = UINT64_MAX;
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, g, 1), 1);
	assert_int_equal(k[0].frames[0], 0x401000);
	assert_int_equal(k[1].frames[0], 0x402000);
	assert_int_equal(h->bucket_count, 2);
	table_add(1, 0, 100, 1.0);
	assert_int_equal(k[1].alloc_samples, 1);
	h->bucket_count = 1000; /* a bucket the shim never made: no counter change */
	table_add(5, 0, 100, 1.0);
	assert_int_equal(k[5].alloc_samples, 0);
	table_lock();
	assert_int_equal(table_restart(), 0); /* copies from and to its own layout */
	h = (struct seg_header *)table_segment();
	assert_int_equal(h->bucket_count, 2);
	assert_int_equal(h->labelset_count, 0);
	assert_int_equal(h->bucket_off, saved.bucket_off);
	k = (const struct seg_bucket *)((const char *)h + saved.bucket_off);
	assert_int_equal(k[1].frames[0], 0x402000);
	table_fini();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_header_scribbled),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_waits),
		cmocka_unit_test(test_fork_wait),
		cmocka_unit_test(test_seqlock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
