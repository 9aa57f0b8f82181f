/*
 * test_labels.c — the attacher's label reader (attach/source/labelsrc.c)
 * against a segment this test makes in its own memory, as the shim would:
 * a memfd named SEG_NAME, mapped shared, so that the reader finds it in
 * /proc/self/maps and reads it with process_vm_readv. Checks the set in
 * force at a time (before the first change, between changes, after the
 * last), a history kept across reads as the ring wraps, a gap when the
 * ring wrapped between two reads (no labels, counted; never wrong ones), a
 * slot handed to another thread, cprof's own keys left out, a set id past
 * the table, the warning's counters, and a process without the shim; and
 * what a forged segment cannot do: slots of threads that do not exist are
 * not taken, the history stays under its total cap however many changes
 * the slots claim, and keys reserved by cprof or Pyroscope are dropped.
 * The slots' owners are threads of this test (A, B, C), idle.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/source/labelsrc.h"
#include "common/proc.h"
#include "model/profile.h"

#define NSETS 8
#define NSLOTS 4

static struct seg_header *h;
static size_t bytes;
/*
 * The changes' times, from a base in the future: a sample newer than the
 * reader's last read makes it read again, as with real clocks.
 */
static uint64_t t0;

/* Three idle threads of this process: the owners of the slots. */
static uint32_t A, B, C;
static uint32_t idle_tid[3];
static int idle_fd[2];

static void *idle(void *arg)
{
	char c;

	__atomic_store_n(&idle_tid[(uintptr_t)arg], (uint32_t)gettid(), __ATOMIC_RELEASE);
	(void)!read(idle_fd[0], &c, 1); /* until the test ends */
	return NULL;
}

static int group_setup(void **state)
{
	pthread_t t;
	uintptr_t i;

	(void)state;
	if (pipe(idle_fd) != 0)
		return -1;
	for (i = 0; i < 3; i++) {
		if (pthread_create(&t, NULL, idle, (void *)i) != 0)
			return -1;
		pthread_detach(t);
		while (!__atomic_load_n(&idle_tid[i], __ATOMIC_ACQUIRE))
			usleep(100);
	}
	A = idle_tid[0];
	B = idle_tid[1];
	C = idle_tid[2];
	return 0;
}

static struct seg_labelset *lset(size_t i)
{
	return (struct seg_labelset *)((char *)h + h->labelset_off) + i;
}

static struct seg_lslot *lslot(size_t i)
{
	return (struct seg_lslot *)((char *)h + h->lslot_off) + i;
}

static int setup(void **state)
{
	size_t off = (sizeof(*h) + 63) / 64 * 64;
	int fd;

	(void)state;
	t0 = clock_mono_ns() + 1000000000000ull;
	bytes = off + NSETS * sizeof(struct seg_labelset) + NSLOTS * sizeof(struct seg_lslot);
	bytes = (bytes + 4095) / 4096 * 4096;
	fd = memfd_create(SEG_NAME, MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)bytes), 0);
	h = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(h != MAP_FAILED);
	close(fd);
	memcpy(h->magic, SEG_MAGIC, 8);
	h->version = SEG_VERSION;
	h->header_size = sizeof(*h);
	h->size = bytes;
	h->max_frames = SEG_MAX_FRAMES;
	h->bucket_size = sizeof(struct seg_bucket);
	h->bucket_off = off;
	h->labelset_off = off;
	h->labelset_cap = NSETS;
	h->labelset_size = sizeof(struct seg_labelset);
	h->lslot_off = off + NSETS * sizeof(struct seg_labelset);
	h->lslot_cap = NSLOTS;
	h->lslot_size = sizeof(struct seg_lslot);
	/* Sets 1..3: endpoint=/a, endpoint=/b, thread=x tenant=t (cprof's key left out). */
	lset(0)->n = 1;
	strcpy(lset(0)->pair[0].key, "endpoint");
	strcpy(lset(0)->pair[0].value, "/a");
	lset(1)->n = 1;
	strcpy(lset(1)->pair[0].key, "endpoint");
	strcpy(lset(1)->pair[0].value, "/b");
	lset(2)->n = 2;
	strcpy(lset(2)->pair[0].key, "tenant");
	strcpy(lset(2)->pair[0].value, "t");
	strcpy(lset(2)->pair[1].key, "thread");
	strcpy(lset(2)->pair[1].value, "x");
	h->labelset_count = 3;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	munmap(h, bytes);
	return 0;
}

/* Thread tid's slot i gets change (ns, set), as the shim's owner thread writes it. */
static void change(size_t i, uint32_t tid, uint64_t ns, uint32_t set)
{
	struct seg_lslot *s = lslot(i);

	s->seq++;
	s->seq_end = s->seq;
	if (s->tid != tid) {
		s->tid = tid;
		s->changes = 0;
	}
	s->state = SEG_LSLOT_LIVE;
	s->ring[s->changes % SEG_LABEL_RING].ns = t0 + ns;
	s->ring[s->changes % SEG_LABEL_RING].set = set;
	s->changes++;
	s->cur = set;
	s->seq++;
	s->seq_end = s->seq;
	if (h->lslot_count < i + 1)
		h->lslot_count = i + 1;
}

/* The labels of tid at ns as "k=v k=v" (ns is always newer than the last read here). */
static const char *at(struct label_src *s, uint32_t tid, uint64_t ns)
{
	static char out[512];
	struct profile_label_in l[LABELSRC_MAX];
	struct labelsrc_text text;
	size_t n, i, k = 0;

	/* As the samplers do: a read after the sample's time, then the lookup. */
	if (!labelsrc_ready(s, t0 + ns))
		labelsrc_sync(s);
	n = labelsrc_at(s, tid, t0 + ns, l, LABELSRC_MAX, &text);
	out[0] = 0;
	for (i = 0; i < n; i++)
		k += (size_t)snprintf(out + k, sizeof(out) - k, "%s%s=%s", i ? " " : "", l[i].key,
				      l[i].str);
	return out;
}

static void test_at(void **state)
{
	struct label_src *s = labelsrc_new(getpid());

	(void)state;
	change(0, A, 1000, 1);
	change(0, A, 2000, 2);
	change(0, A, 3000, 0);
	change(1, C, 1500, 3);
	assert_string_equal(at(s, A, 999), "");           /* before its first change */
	assert_string_equal(at(s, A, 1000), "endpoint=/a"); /* at a change: the new set */
	assert_string_equal(at(s, A, 2500), "endpoint=/b");
	assert_string_equal(at(s, A, 3500), "");           /* cleared */
	assert_string_equal(at(s, C, 2000), "tenant=t");   /* thread=x is cprof's own */
	assert_string_equal(at(s, 300, 2000), "");           /* a thread with no slot */
	assert_int_equal(labelsrc_stats(s)->unknown, 0);
	labelsrc_free(s);
}

/* The history outlives the ring when read often enough; a wrap between reads is a gap. */
static void test_ring_and_gap(void **state)
{
	struct label_src *s = labelsrc_new(getpid());
	uint64_t k;

	(void)state;
	for (k = 0; k < SEG_LABEL_RING / 2; k++)
		change(0, A, 1000 + k, 1 + k % 2);
	assert_string_equal(at(s, A, 1000), "endpoint=/a"); /* read: 128 changes seen */
	for (; k < SEG_LABEL_RING + 64; k++)
		change(0, A, 1000 + k, 1 + k % 2);
	/* A newer sample: read again; the ring wrapped, not past what was seen. */
	assert_string_equal(at(s, A, 1000 + k), "endpoint=/b");
	assert_string_equal(at(s, A, 1000), "endpoint=/a"); /* kept from the first read */
	assert_string_equal(at(s, A, 1001), "endpoint=/b");
	assert_int_equal(labelsrc_stats(s)->unknown, 0);
	/* Now 2 ring-fulls more before the next read: the changes between are lost. */
	for (; k < 3 * SEG_LABEL_RING + 64 + 10; k++)
		change(0, A, 100000 + k, 1 + k % 2);
	assert_string_equal(at(s, A, 100000 + k), "endpoint=/b"); /* the newest: kept */
	/* Between the last change seen before and the first one kept: unknown, not wrong. */
	assert_string_equal(at(s, A, 100000 + SEG_LABEL_RING + 64), "");
	assert_int_equal(labelsrc_stats(s)->unknown, 1);
	/* Before the gap: still known. */
	assert_string_equal(at(s, A, 1000 + SEG_LABEL_RING + 63), "endpoint=/b");
	labelsrc_free(s);
}

/* ptrace's tracer: reads the segment while the recording thread asks. */
struct reader_arg {
	struct label_src *s;
	int stop;
	unsigned reads;
};

static void *reader(void *arg)
{
	struct reader_arg *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
		__atomic_add_fetch(&r->reads, (unsigned)labelsrc_trysync(r->s, 0), __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Another thread's reads keep the history (a ring that wraps between the
 * recording thread's own reads loses nothing), and a sample's strings are
 * its own: a read after the lookup releases the copy they came from.
 */
static void test_trysync(void **state)
{
	struct label_src *s = labelsrc_new(getpid());
	struct reader_arg r = { s, 0, 0 };
	struct profile_label_in l[LABELSRC_MAX];
	struct labelsrc_text text;
	pthread_t th;
	uint64_t k;
	size_t n;

	(void)state;
	change(0, A, 1000, 1);
	assert_int_equal(labelsrc_trysync(s, 0), 1);
	assert_int_equal(labelsrc_trysync(s, 1000), 0); /* read less than a second ago */
	n = labelsrc_at(s, A, t0 + 1000, l, LABELSRC_MAX, &text);
	assert_int_equal(n, 1);
	change(0, A, 2000, 2);
	labelsrc_sync(s); /* the copy l's strings came from is released */
	assert_string_equal(l[0].key, "endpoint");
	assert_string_equal(l[0].str, "/a");
	assert_int_equal(pthread_create(&th, NULL, reader, &r), 0);
	/* Four ring-fulls, each change read before the ring wraps (the reader keeps up). */
	for (k = 0; k < 4 * SEG_LABEL_RING; k++) {
		change(0, A, 3000 + k, 1 + k % 2);
		if (k % 64 == 63) {
			/* Two reads of the reader's after these changes: one began after them. */
			unsigned before = __atomic_load_n(&r.reads, __ATOMIC_ACQUIRE);

			while (__atomic_load_n(&r.reads, __ATOMIC_ACQUIRE) < before + 2)
				sched_yield();
		}
		n = labelsrc_at(s, A, t0 + 1000, l, LABELSRC_MAX, &text);
		assert_int_equal(n, 1);
		assert_string_equal(l[0].str, "/a");
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	labelsrc_sync(s);
	assert_string_equal(at(s, A, 3000 + 4 * SEG_LABEL_RING - 1), "endpoint=/b");
	assert_string_equal(at(s, A, 3000), "endpoint=/a");
	assert_int_equal(labelsrc_stats(s)->unknown, 0);
	labelsrc_free(s);
}

/* A slot given to another thread: each tid keeps its own history. */
static void test_slot_reused(void **state)
{
	struct label_src *s = labelsrc_new(getpid());

	(void)state;
	change(0, A, 1000, 1);
	assert_string_equal(at(s, A, 1000), "endpoint=/a");
	lslot(0)->state = SEG_LSLOT_EXITED;
	change(0, B, 5000, 2);
	assert_string_equal(at(s, B, 5000), "endpoint=/b");
	assert_string_equal(at(s, B, 4000), "");
	assert_string_equal(at(s, A, 1500), "endpoint=/a"); /* the thread that ended */
	labelsrc_free(s);
}

/* Hostile ids: a set past the table or emptied gives nothing; a torn slot is skipped. */
static void test_untrusted(void **state)
{
	struct label_src *s = labelsrc_new(getpid());

	(void)state;
	change(0, A, 1000, 7); /* past labelset_count */
	change(1, C, 1000, 1);
	lslot(1)->seq = 5;       /* being written, forever */
	assert_string_equal(at(s, A, 2000), "");
	assert_string_equal(at(s, C, 2000), "");
	assert_true(labelsrc_stats(s)->torn >= 1);
	labelsrc_free(s);
}

static void test_warn_counters(void **state)
{
	struct label_src *s = labelsrc_new(getpid());

	(void)state;
	change(0, A, 1000, 1);
	(void)at(s, A, 2000);
	assert_non_null(labelsrc_header(s));
	h->labels_truncated = 2;
	labelsrc_warn(s, h, getpid(), "test"); /* one line on stderr; it must not crash */
	labelsrc_warn(NULL, NULL, getpid(), "test");
	labelsrc_free(s);
}

/* A slot whose owner is no thread of the target: never taken, whatever it claims. */
static void test_dead_threads(void **state)
{
	struct label_src *s = labelsrc_new(getpid());

	(void)state;
	change(0, 3999999, 1000, 1);
	change(1, A, 1000, 2);
	assert_string_equal(at(s, 3999999, 2000), "");
	assert_string_equal(at(s, A, 2000), "endpoint=/b");
	assert_int_equal(labelsrc_stats(s)->entries, 64); /* A's first block only */
	labelsrc_free(s);
}

/*
 * Slots whose change counts jump by a ring at every read: the history
 * keeps at most LABELSRC_MAX_ENTRIES, the newest changes still found.
 */
static void test_history_cap(void **state)
{
	struct label_src *s = labelsrc_new(getpid());
	uint64_t r, k, ns = 1000;
	size_t i;

	(void)state;
	for (r = 0; r < 3 * LABELSRC_MAX_ENTRIES / (3 * SEG_LABEL_RING); r++) {
		for (i = 0; i < 3; i++)
			for (k = 0; k < SEG_LABEL_RING; k++)
				change(i, idle_tid[i], ns + k, 1 + (uint32_t)(k % 2));
		ns += SEG_LABEL_RING;
		labelsrc_sync(s);
		assert_true(labelsrc_stats(s)->entries <= LABELSRC_MAX_ENTRIES);
	}
	assert_string_equal(at(s, A, ns - 1), "endpoint=/b");
	assert_string_equal(at(s, B, ns - 2), "endpoint=/a");
	assert_string_equal(at(s, C, 1000), ""); /* long gone: a gap, not a wrong set */
	labelsrc_free(s);
}

/* Keys of cprof's own labels and of Pyroscope's are dropped (and noted once). */
static void test_reserved_keys(void **state)
{
	static const char *const keys[] = { "__name__", "__x", "bytes", "ok", "service_name",
					    "tid" };
	struct label_src *s = labelsrc_new(getpid());
	size_t i;

	(void)state;
	lset(3)->n = 6;
	for (i = 0; i < 6; i++) {
		strcpy(lset(3)->pair[i].key, keys[i]);
		strcpy(lset(3)->pair[i].value, "v");
	}
	h->labelset_count = 4;
	change(0, A, 1000, 4);
	assert_string_equal(at(s, A, 2000), "ok=v");
	assert_string_equal(at(s, A, 3000), "ok=v"); /* notes said once: see stderr */
	assert_string_equal(labelsrc_reserved("service_name"), "Pyroscope's");
	assert_string_equal(labelsrc_reserved("__anything"), "Pyroscope's");
	assert_string_equal(labelsrc_reserved("thread"), "cprof's own");
	assert_null(labelsrc_reserved("_one"));
	assert_null(labelsrc_reserved("service"));
	labelsrc_free(s);
}

/* A process without libcprof.so: no labels, and no error. */
static void test_no_shim(void **state)
{
	struct label_src *s = labelsrc_new(1);
	struct profile_label_in l[LABELSRC_MAX];
	struct labelsrc_text text;

	(void)state;
	assert_int_equal(labelsrc_at(s, 1, 1000, l, LABELSRC_MAX, &text), 0);
	assert_int_equal(labelsrc_poll(s), -1);
	labelsrc_free(s);
	assert_int_equal(labelsrc_at(NULL, 1, 1000, l, LABELSRC_MAX, &text), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_at, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_and_gap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trysync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slot_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_untrusted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warn_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserved_keys, setup, teardown),
		cmocka_unit_test(test_no_shim),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
