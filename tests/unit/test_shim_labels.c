/*
 * test_shim_labels.c — unit tests for shim/labels.c, linked with
 * shim/table.c and stubs for the rest of the shim (armed and active):
 * the meaning of push (merge; a key set takes the new value; a NULL value
 * removes it), pop (the set before the matching push), set and clear; the
 * limits (8 pairs, key and value lengths cut at a UTF-8 boundary, 64
 * nested pushes, 4096 sets), each counted; one id per set across threads;
 * a thread's slot (its ring of timed changes, its state at exit); a
 * bucket's key including the set; and a fork child's segment (the sets
 * with their ids, the thread's set published in a fresh slot).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim/labels.h"
#include "shim/table.h"

/* The rest of the shim, as an armed and active one looks to labels.c. */
__thread struct shim_thread shim_tls __attribute__((tls_model("initial-exec")));
int shim_state = SHIM_READY;
uint64_t shim_rate = 65536;
int shim_activate(void)
{
	return 1;
}

static struct seg_header *seg(void)
{
	return table_segment_labels();
}

static const struct seg_labelset *set_of(uint32_t id)
{
	assert_true(id >= 1 && id <= seg()->labelset_count);
	return (const struct seg_labelset *)((const char *)seg() + seg()->labelset_off) + id - 1;
}

static const struct seg_lslot *slot(size_t i)
{
	return (const struct seg_lslot *)((const char *)seg() + seg()->lslot_off) + i;
}

/* The current set as "k=v k=v", "" for none. */
static const char *now(void)
{
	static char out[1024];
	const struct seg_labelset *s;
	size_t n = 0;
	uint32_t i;

	out[0] = 0;
	if (labels_current() == 0)
		return out;
	s = set_of(labels_current());
	for (i = 0; i < s->n; i++)
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s=%s", i ? " " : "",
				      s->pair[i].key, s->pair[i].value);
	return out;
}

static int setup(void **state)
{
	(void)state;
	memset(&labels_tls, 0, sizeof(labels_tls));
	assert_int_equal(table_init(65536, 64), 0);
	assert_int_equal(labels_init(), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	labels_fini();
	table_fini();
	return 0;
}

static void test_push_pop(void **state)
{
	(void)state;
	assert_int_equal(cprof_labels_active(), 1);
	cprof_labels_push("endpoint", "/search", "tenant", "a", NULL);
	assert_string_equal(now(), "endpoint=/search tenant=a");
	cprof_labels_push("tenant", "b", "job", "x", NULL); /* merged, sorted by key */
	assert_string_equal(now(), "endpoint=/search job=x tenant=b");
	cprof_labels_push("job", NULL, NULL); /* a NULL value removes the key */
	assert_string_equal(now(), "endpoint=/search tenant=b");
	cprof_labels_push(NULL, NULL); /* the same labels again */
	assert_string_equal(now(), "endpoint=/search tenant=b");
	cprof_labels_pop();
	cprof_labels_pop();
	assert_string_equal(now(), "endpoint=/search job=x tenant=b");
	cprof_labels_pop();
	assert_string_equal(now(), "endpoint=/search tenant=a");
	cprof_labels_pop();
	assert_string_equal(now(), "");
	assert_int_equal(seg()->labels_unbalanced, 0);
	cprof_labels_pop(); /* without a push: counted, nothing changes */
	assert_string_equal(now(), "");
	assert_int_equal(seg()->labels_unbalanced, 1);
}

static void test_set_clear(void **state)
{
	(void)state;
	cprof_labels_push("a", "1", NULL);
	cprof_labels_set("b", "2", "c", "3", NULL); /* replaces */
	assert_string_equal(now(), "b=2 c=3");
	cprof_labels_clear();
	assert_string_equal(now(), "");
	cprof_labels_set("d", "4", NULL);
	cprof_labels_pop(); /* restores what was before the push, whatever set did */
	assert_string_equal(now(), "");
}

static void test_one_id_per_set(void **state)
{
	uint32_t a, b;

	(void)state;
	cprof_labels_set("x", "1", "y", "2", NULL);
	a = labels_current();
	cprof_labels_set("y", "2", "x", "1", NULL); /* another order: the same set */
	b = labels_current();
	assert_int_equal(a, b);
	assert_int_equal(seg()->labelset_count, 1);
	cprof_labels_clear();
}

static void *other_thread(void *arg)
{
	cprof_labels_set("x", "1", "y", "2", NULL);
	*(uint32_t *)arg = labels_current();
	return NULL;
}

static void test_threads(void **state)
{
	const struct seg_lslot *s;
	pthread_t t;
	uint32_t mine, theirs = 0;

	(void)state;
	cprof_labels_set("x", "1", "y", "2", NULL);
	mine = labels_current();
	assert_int_equal(pthread_create(&t, NULL, other_thread, &theirs), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(theirs, mine); /* one id across threads */
	assert_int_equal(seg()->lslot_count, 2);
	s = slot(1);
	assert_int_equal(s->state, SEG_LSLOT_EXITED); /* the key's destructor at its exit */
	assert_int_equal(s->changes, 1);
	assert_int_equal(s->cur, mine);
	assert_int_equal(s->seq, s->seq_end);
	assert_int_equal(s->seq & 1, 0);
	s = slot(0);
	assert_int_equal(s->tid, (uint32_t)gettid());
	assert_int_equal(s->state, SEG_LSLOT_LIVE);
	cprof_labels_clear();
}

static void test_ring(void **state)
{
	const struct seg_lslot *s;
	uint64_t k;

	(void)state;
	for (k = 0; k < SEG_LABEL_RING + 10; k++) {
		cprof_labels_push("n", k % 2 ? "odd" : "even", NULL);
		cprof_labels_pop();
	}
	s = slot(0);
	assert_int_equal(s->changes, 2 * (SEG_LABEL_RING + 10));
	assert_int_equal(s->cur, 0);
	for (k = s->changes - SEG_LABEL_RING + 1; k < s->changes; k++) {
		assert_true(s->ring[k % SEG_LABEL_RING].ns >= s->ring[(k - 1) % SEG_LABEL_RING].ns);
		assert_int_equal(s->ring[k % SEG_LABEL_RING].set == 0, k % 2 == 1); /* pops: none */
	}
}

static void test_limits(void **state)
{
	char key[100], value[200];
	const struct seg_labelset *s;
	unsigned i;

	(void)state;
	cprof_labels_push("a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6", "g", "7", "h",
			  "8", "i", "9", NULL);
	s = set_of(labels_current());
	assert_int_equal(s->n, SEG_LABEL_PAIRS);
	assert_true(s->flags & SEG_LABELS_TRUNCATED);
	assert_int_equal(seg()->labels_truncated, 1);
	cprof_labels_pop();
	memset(key, 'k', sizeof(key));
	key[sizeof(key) - 1] = 0;
	memset(value, 'v', sizeof(value));
	memcpy(value + 62, "\xc3\xa9", 2); /* é at bytes 62-63, past the 63 kept: cut before it */
	value[sizeof(value) - 1] = 0;
	cprof_labels_push(key, value, NULL);
	s = set_of(labels_current());
	assert_int_equal(strlen(s->pair[0].key), SEG_LABEL_KEY - 1);
	assert_int_equal(strlen(s->pair[0].value), 62);
	cprof_labels_pop();
	cprof_labels_push("", "empty key", NULL); /* dropped, counted */
	assert_string_equal(now(), "");
	cprof_labels_pop();
	/* 64 nested pushes remembered; deeper ones counted and not undone. */
	for (i = 0; i < LABELS_DEPTH + 2; i++) {
		snprintf(value, sizeof(value), "%u", i);
		cprof_labels_push("depth", value, NULL);
	}
	assert_string_equal(now(), "depth=65");
	cprof_labels_pop();
	cprof_labels_pop();
	assert_string_equal(now(), "depth=65");
	assert_int_equal(seg()->labels_unbalanced, 2 + 2);
	cprof_labels_pop();
	assert_string_equal(now(), "depth=62");
	for (i = 0; i < LABELS_DEPTH - 1; i++)
		cprof_labels_pop();
	assert_string_equal(now(), "");
}

static void test_table_full(void **state)
{
	char v[32];
	unsigned i;

	(void)state;
	for (i = 0; i < SEG_DEFAULT_LABELSETS; i++) {
		snprintf(v, sizeof(v), "%u", i);
		cprof_labels_set("n", v, NULL);
		assert_int_equal(labels_current(), i + 1);
	}
	cprof_labels_set("n", "one more", NULL);
	assert_int_equal(labels_current(), 0); /* none: counted */
	assert_int_equal(seg()->labels_dropped, 1);
	cprof_labels_set("n", "7", NULL); /* an existing set still is */
	assert_int_equal(labels_current(), 8);
	cprof_labels_clear();
}

static void test_bucket_key(void **state)
{
	uint64_t f[2] = { 0x401000, 0x402000 };
	int32_t a, b;

	(void)state;
	a = table_bucket_labeled(SEG_KIND_ALLOC, 0, 0, f, 2);
	cprof_labels_set("tenant", "a", NULL);
	b = table_bucket_labeled(SEG_KIND_ALLOC, 0, labels_current(), f, 2);
	assert_true(a >= 0 && b >= 0 && a != b); /* the same stack, two label sets: two buckets */
	assert_int_equal(table_bucket_labeled(SEG_KIND_ALLOC, 0, labels_current(), f, 2), b);
	assert_int_equal(table_bucket(SEG_KIND_ALLOC, 0, f, 2), a);
	cprof_labels_clear();
}

static void test_fork_child(void **state)
{
	uint32_t id;

	(void)state;
	cprof_labels_set("x", "1", NULL);
	cprof_labels_push("y", "2", NULL);
	id = labels_current();
	table_lock(); /* as the fork prepare handler leaves it */
	assert_int_equal(table_restart(), 0);
	labels_fork_child();
	assert_int_equal(labels_current(), id); /* the same id in the child's segment */
	assert_int_equal(seg()->labelset_count, 2);
	assert_string_equal(now(), "x=1 y=2");
	assert_int_equal(seg()->lslot_count, 1);
	assert_int_equal(slot(0)->cur, id);
	assert_int_equal(slot(0)->changes, 1);
	assert_int_equal(slot(0)->tid, (uint32_t)gettid());
	cprof_labels_pop(); /* the child's pops still restore */
	assert_string_equal(now(), "x=1");
	assert_int_equal(slot(0)->changes, 2);
	cprof_labels_clear();
}

/*
 * The shared header scribbled over from outside (offsets, caps and counts
 * pointing anywhere, a slot's change count): the shim writes where its own
 * layout says, never where the header now says.
 */
static void test_header_scribbled(void **state)
{
	struct seg_header *h = seg(), saved;
	struct seg_labelset *sets;
	struct seg_lslot *sl;
	uint32_t a, b;

	(void)state;
	saved = *h;
	sets = (struct seg_labelset *)((char *)h + saved.labelset_off);
	sl = (struct seg_lslot *)((char *)h + saved.lslot_off);
	cprof_labels_set("k", "1", NULL);
	a = labels_current();
	assert_int_equal(a, 1);
	h->labelset_off = UINT64_MAX / 2;
	h->labelset_cap = UINT64_MAX;
	h->labelset_count = 0;
	h->lslot_off = 1ull << 40;
	h->lslot_cap = UINT64_MAX;
	h->lslot_count = 0;
	sl[0].changes = 0x7fffffffffffull; /* the owner's slot: a count it did not write */
	cprof_labels_set("k", "2", NULL);
	b = labels_current();
	assert_int_equal(b, 2); /* the next id by the shim's own count */
	assert_string_equal(sets[1].pair[0].value, "2"); /* where its own layout says */
	assert_int_equal(h->labelset_count, 2);
	assert_int_equal(sl[0].changes, 2); /* its own count, written back */
	assert_int_equal(sl[0].ring[1].set, 2);
	cprof_labels_set("k", "1", NULL); /* found by the index, within the shim's count */
	assert_int_equal(labels_current(), a);
	cprof_labels_clear();
	h->labelset_off = saved.labelset_off;
	h->lslot_off = saved.lslot_off;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_push_pop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_clear, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_id_per_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bucket_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_child, setup, teardown),
		cmocka_unit_test_setup_teardown(test_header_scribbled, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
