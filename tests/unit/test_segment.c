/*
 * test_segment.c — the reader of libcprof.so's segment against segments
 * built in memory: a good one, one of another version, corrupted headers
 * (every size, offset and count), truncated ones, torn and malformed
 * buckets, and a reader that fails. The segment is untrusted input: none
 * of these may crash, and a bad bucket must never reach the copy. Also the
 * block and mutex buckets of layout 3 (accepted, their numbers and deltas,
 * malformed ones left out), the refusal of layout 2, and the message that
 * names the variable when a kind is off in the target. And the label
 * tables of layout 4 (sets, slots, a bucket's labels; hostile sizes and
 * counts, malformed sets, torn slots) and layout 3 read without them.
 * And a forged segment of the largest size the layout allows, made up on
 * the fly by the read callback: what a copy holds and reads stays under
 * the stated caps.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attach/source/segread.h"

#define BASE 0x7f0000000000ull
#define NB 8
#define NS 4 /* label sets */
#define NL 2 /* label slots */

struct mem {
	unsigned char *data;
	size_t len;
	int torn_reads; /* reads of a single bucket that still see it torn */
	int fail;       /* fail every read */
	int bulk_reads; /* reads of more than one bucket so far */
	int write_between; /* a writer updates bucket 2 right after the first bulk read */
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct mem *m = ctx;
	struct seg_bucket *b;

	if (m->fail || addr < BASE || addr - BASE > m->len || n > m->len - (addr - BASE))
		return -1;
	memcpy(buf, m->data + (addr - BASE), n);
	if (n > sizeof(struct seg_bucket) && ++m->bulk_reads == 1 && m->write_between) {
		/* A whole update of bucket 2 between the reader's two copies. */
		b = (struct seg_bucket *)(m->data + sizeof(struct seg_header)) + 2;
		b->seq += 2;
		b->seq_end = b->seq;
		b->alloc_objects = 777.0;
	}
	/* A single-bucket re-read: the writer finishes after torn_reads tries. */
	if (n == sizeof(struct seg_bucket)) {
		b = (struct seg_bucket *)(m->data + (addr - BASE));
		if (m->torn_reads > 0 && --m->torn_reads == 0) {
			b->seq = b->seq_end = b->seq + 1;
		}
	}
	return 0;
}

static struct mem *make(size_t nb)
{
	struct mem *m = calloc(1, sizeof(*m));
	struct seg_header *h;
	struct seg_bucket *b;
	size_t i;

	m->len = sizeof(*h) + NB * sizeof(*b) + NS * sizeof(struct seg_labelset) +
		 NL * sizeof(struct seg_lslot);
	m->data = calloc(1, m->len);
	h = (struct seg_header *)m->data;
	memcpy(h->magic, SEG_MAGIC, 8);
	h->version = SEG_VERSION;
	h->header_size = sizeof(*h);
	h->size = m->len;
	h->pid = 42;
	h->max_frames = SEG_MAX_FRAMES;
	h->bucket_size = sizeof(*b);
	h->sample_rate = 65536;
	h->bucket_off = sizeof(*h);
	h->bucket_cap = NB;
	h->bucket_count = nb;
	h->labelset_off = sizeof(*h) + NB * sizeof(*b);
	h->labelset_cap = NS;
	h->labelset_size = sizeof(struct seg_labelset);
	h->lslot_off = h->labelset_off + NS * sizeof(struct seg_labelset);
	h->lslot_cap = NL;
	h->lslot_size = sizeof(struct seg_lslot);
	for (i = 0; i < nb; i++) {
		b = (struct seg_bucket *)(m->data + sizeof(*h)) + i;
		b->seq = b->seq_end = 2 * i;
		b->kind = i % 2 ? SEG_KIND_THREAD : SEG_KIND_ALLOC;
		if (i >= 5) {
			/* Buckets 5.. are block and mutex ones, when the test asks for that many. */
			b->kind = i % 2 ? SEG_KIND_MUTEX : SEG_KIND_BLOCK;
			b->nframes = 3;
			b->frames[0] = 0x1000 + i;
			b->wait.events = i;
			b->wait.event_ns = 1000 * i;
			b->wait.contentions = 10.0 * i;
			b->wait.delay_ns = 1e6 * i;
			continue;
		}
		b->nframes = 3;
		b->frames[0] = 0x1000 + i;
		b->alloc_samples = i + 1;
		b->alloc_objects = 10.0 * (i + 1);
	}
	return m;
}

static void drop(struct mem *m)
{
	free(m->data);
	free(m);
}

static struct seg_header *hdr(struct mem *m)
{
	return (struct seg_header *)m->data;
}

static struct seg_bucket *bucket(struct mem *m, size_t i)
{
	return (struct seg_bucket *)(m->data + sizeof(struct seg_header)) + i;
}

static int copy(struct mem *m, struct seg_copy *c)
{
	char why[256];

	return segment_copy(c, mem_read, m, BASE, m->len, why, sizeof(why));
}

static void test_good(void **state)
{
	struct mem *m = make(5);
	struct seg_copy c;

	(void)state;
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.n, 5);
	assert_int_equal(c.torn, 0);
	assert_int_equal(c.h.sample_rate, 65536);
	assert_int_equal(c.b[4].frames[0], 0x1004);
	assert_int_equal(c.b[3].kind, SEG_KIND_THREAD);
	assert_true(c.b[2].alloc_objects == 30.0);
	segment_release(&c);
	drop(m);
}

static void test_empty(void **state)
{
	struct mem *m = make(0);
	struct seg_copy c;

	(void)state;
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.n, 0);
	assert_null(c.b);
	drop(m);
}

static void test_version(void **state)
{
	struct mem *m = make(2);
	struct seg_copy c;
	char why[256];

	(void)state;
	hdr(m)->version = SEG_VERSION + 1;
	assert_int_equal(segment_copy(&c, mem_read, m, BASE, m->len, why, sizeof(why)), -2);
	assert_non_null(strstr(why, "version"));
	memcpy(hdr(m)->magic, "NOTCPROF", 8);
	assert_int_equal(segment_copy(&c, mem_read, m, BASE, m->len, why, sizeof(why)), -1);
	drop(m);
}

/* Every header field that sizes or places something, set to hostile values. */
static void test_bad_headers(void **state)
{
	static const uint64_t evil[] = { 0, 1, 7, 4095, 1u << 20, UINT32_MAX, UINT64_MAX / 2,
					 UINT64_MAX - 7, UINT64_MAX };
	struct seg_copy c;
	size_t f, i;

	(void)state;
	for (f = 0; f < 7; f++) {
		for (i = 0; i < sizeof(evil) / sizeof(evil[0]); i++) {
			struct mem *m = make(5);
			struct seg_header *h = hdr(m);
			int r;

			switch (f) {
			case 0: h->header_size = (uint32_t)evil[i]; break;
			case 1: h->size = evil[i]; break;
			case 2: h->max_frames = (uint32_t)evil[i]; break;
			case 3: h->bucket_size = (uint32_t)evil[i]; break;
			case 4: h->bucket_off = evil[i]; break;
			case 5: h->bucket_cap = evil[i]; break;
			case 6: h->bucket_count = evil[i]; break;
			}
			r = copy(m, &c);
			if (r == 0) {
				/* Accepted: then it must be within the real table. */
				assert_true(c.n <= NB);
				segment_release(&c);
			}
			drop(m);
		}
	}
}

static void test_count_past_cap(void **state)
{
	struct mem *m = make(NB);
	struct seg_copy c;

	(void)state;
	hdr(m)->bucket_count = 1000000;
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.n, NB);
	segment_release(&c);
	drop(m);
}

static void test_truncated(void **state)
{
	struct mem *m = make(5);
	struct seg_copy c;
	char why[256];
	size_t len;

	(void)state;
	/* The mapping shorter than the header says: refused, at every length. */
	for (len = 0; len < m->len; len += 8)
		assert_int_equal(segment_copy(&c, mem_read, m, BASE, len, why, sizeof(why)), -1);
	drop(m);
}

static void test_torn_then_whole(void **state)
{
	struct mem *m = make(5);
	struct seg_copy c;

	(void)state;
	bucket(m, 2)->seq = 5; /* odd: being updated */
	bucket(m, 2)->seq_end = 4;
	m->torn_reads = 3; /* the writer finishes during the third re-read */
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.n, 5);
	assert_int_equal(c.torn, 0);
	segment_release(&c);
	drop(m);
}

static void test_torn_forever(void **state)
{
	struct mem *m = make(5);
	struct seg_copy c;
	size_t i;

	(void)state;
	bucket(m, 1)->seq = 7;
	bucket(m, 1)->seq_end = 7;  /* odd: never whole */
	bucket(m, 3)->seq = 8;
	bucket(m, 3)->seq_end = 6;  /* ends disagree: never whole */
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.torn, 2);
	for (i = 0; i < c.n; i++)
		assert_true(c.b[i].frames[0] != 0x1001 && c.b[i].frames[0] != 0x1003);
	segment_release(&c);
	drop(m);
}

/* Counters copied, then changed before the second copy: the reader must take the new ones. */
static void test_changed_between_copies(void **state)
{
	struct mem *m = make(5);
	struct seg_copy c;

	(void)state;
	m->write_between = 1;
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.n, 5);
	assert_int_equal(c.torn, 0);
	assert_true(c.b[2].alloc_objects == 777.0);
	assert_int_equal(c.b[2].seq, 6);
	segment_release(&c);
	drop(m);
}

static void test_malformed_buckets(void **state)
{
	struct mem *m = make(5);
	struct seg_copy c;

	(void)state;
	bucket(m, 0)->kind = 99;
	bucket(m, 4)->nframes = SEG_MAX_FRAMES + 1;
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.invalid, 2);
	segment_release(&c);
	drop(m);
}

/* Layout 3's block and mutex buckets: kept, with their numbers. */
static void test_wait_buckets(void **state)
{
	struct mem *m = make(NB);
	struct segment_wait v;
	struct seg_copy c;

	(void)state;
	hdr(m)->block_rate = 10000;
	hdr(m)->mutex_fraction = 10;
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.n, NB);
	assert_int_equal(c.invalid, 0);
	assert_int_equal(c.h.block_rate, 10000);
	assert_int_equal(c.h.mutex_fraction, 10);
	assert_int_equal(c.b[5].kind, SEG_KIND_MUTEX);
	assert_int_equal(c.b[6].kind, SEG_KIND_BLOCK);
	assert_string_equal(segment_kind_name(c.b[6].kind), "block");
	assert_string_equal(segment_kind_name(SEG_KIND_MUTEX), "mutex");
	assert_string_equal(segment_kind_name(SEG_KIND_ALLOC), "alloc");
	assert_null(segment_kind_name(0));
	assert_null(segment_kind_name(SEG_KIND_MAX + 1));
	segment_wait_values(&c.b[6], NULL, &v);
	assert_true(v.contentions == 60.0 && v.delay_ns == 6e6);
	assert_int_equal(v.events, 6);
	assert_int_equal(v.event_ns, 6000);
	/* The change since an earlier copy, never negative. */
	segment_wait_values(&c.b[6], &c.b[5], &v);
	assert_true(v.contentions == 10.0 && v.delay_ns == 1e6);
	assert_int_equal(v.events, 1);
	segment_wait_values(&c.b[5], &c.b[6], &v);
	assert_true(v.contentions == 0 && v.delay_ns == 0 && v.events == 0 && v.event_ns == 0);
	segment_release(&c);
	drop(m);
}

/* A block or mutex bucket with garbage where the layout says 0, or impossible estimates. */
static void test_wait_buckets_malformed(void **state)
{
	static const double bad[] = { -1.0, NAN, INFINITY, -INFINITY };
	struct seg_copy c;
	size_t i;

	(void)state;
	for (i = 0; i < 4 + 4 + 2; i++) {
		struct mem *m = make(NB);
		struct seg_bucket *b = bucket(m, 6);

		if (i < 4)
			b->wait.contentions = bad[i];
		else if (i < 8)
			b->wait.delay_ns = bad[i - 4];
		else if (i == 8)
			b->wait.reserved[1] = 1;
		else
			b->wait.reserved_d[0] = 0.5;
		assert_int_equal(copy(m, &c), 0);
		assert_int_equal(c.n, NB - 1);
		assert_int_equal(c.invalid, 1);
		segment_release(&c);
		drop(m);
	}
}

/* The layout before block and mutex buckets: refused, naming both versions. */
static void test_version_2(void **state)
{
	struct mem *m = make(2);
	struct seg_copy c;
	char why[256];

	(void)state;
	hdr(m)->version = 2;
	assert_int_equal(segment_copy(&c, mem_read, m, BASE, m->len, why, sizeof(why)), -2);
	assert_non_null(strstr(why, "version 2"));
	assert_non_null(strstr(why, "versions 3 to 4"));
	drop(m);
}

static void test_wait_enabled(void **state)
{
	struct seg_header h = { 0 };
	char why[256];

	(void)state;
	h.block_rate = 1;
	h.mutex_fraction = 1;
	assert_int_equal(segment_wait_enabled(&h, SEG_KIND_BLOCK, why, sizeof(why)), 1);
	assert_int_equal(segment_wait_enabled(&h, SEG_KIND_MUTEX, why, sizeof(why)), 1);
	h.block_rate = 0;
	assert_int_equal(segment_wait_enabled(&h, SEG_KIND_BLOCK, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "CPROF_BLOCK_RATE"));
	assert_int_equal(segment_wait_enabled(&h, SEG_KIND_MUTEX, why, sizeof(why)), 1);
	h.mutex_fraction = 0;
	assert_int_equal(segment_wait_enabled(&h, SEG_KIND_MUTEX, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "CPROF_MUTEX_FRACTION"));
}

/* The same stack in an earlier copy: at its index, or a little below when buckets were left out. */
static void test_base_of(void **state)
{
	struct mem *m = make(NB);
	struct seg_copy a, b;

	(void)state;
	assert_int_equal(copy(m, &a), 0);
	bucket(m, 1)->seq = 7; /* torn in the second copy: left out, the rest shift down */
	bucket(m, 1)->seq_end = 7;
	assert_int_equal(copy(m, &b), 0);
	assert_int_equal(b.n, NB - 1);
	assert_ptr_equal(segment_base_of(&a, 5, &b.b[5]), &a.b[6]);
	assert_ptr_equal(segment_base_of(&a, 0, &b.b[0]), &a.b[0]);
	assert_ptr_equal(segment_base_of(&b, 6, &a.b[6]), &b.b[5]);
	assert_null(segment_base_of(&b, 1, &a.b[1]));
	assert_null(segment_base_of(NULL, 0, &a.b[0]));
	segment_release(&a);
	segment_release(&b);
	drop(m);
}

static struct seg_labelset *lset(struct mem *m, size_t i)
{
	return (struct seg_labelset *)(m->data + hdr(m)->labelset_off) + i;
}

static struct seg_lslot *lslot(struct mem *m, size_t i)
{
	return (struct seg_lslot *)(m->data + hdr(m)->lslot_off) + i;
}

/* Sets copied and checked; a bucket's labels kept, one naming a set past the copy left out. */
static void test_labels(void **state)
{
	struct mem *m = make(5);
	const struct seg_labelset *s;
	struct seg_copy c;

	(void)state;
	lset(m, 0)->n = 1;
	memcpy(lset(m, 0)->pair[0].key, "endpoint", 9);
	memset(lset(m, 0)->pair[0].value, 'x', sizeof(lset(m, 0)->pair[0].value)); /* no NUL */
	lset(m, 1)->n = SEG_LABEL_PAIRS + 1; /* malformed: emptied, the id stays */
	lset(m, 2)->n = 1;
	hdr(m)->labelset_count = 3;
	bucket(m, 0)->labels = 1;
	bucket(m, 2)->labels = 4; /* past the sets published */
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.nsets, 3);
	assert_int_equal(c.sets_invalid, 1);
	assert_int_equal(c.n, 4);
	assert_int_equal(c.invalid, 1);
	assert_int_equal(c.b[0].labels, 1);
	s = segment_labelset(&c, 1);
	assert_non_null(s);
	assert_string_equal(s->pair[0].key, "endpoint");
	assert_int_equal(strlen(s->pair[0].value), SEG_LABEL_VALUE - 1);
	assert_null(segment_labelset(&c, 0));
	assert_null(segment_labelset(&c, 2));
	assert_non_null(segment_labelset(&c, 3));
	assert_null(segment_labelset(&c, 4));
	segment_release(&c);
	hdr(m)->labelset_count = 1000; /* past the cap: only the cap is read */
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.nsets, NS);
	segment_release(&c);
	drop(m);
}

/* Slots: a whole one copied, one whose lock stays odd left out, the count capped. */
static void test_slots(void **state)
{
	struct mem *m = make(2);
	struct seg_copy c;
	char why[256];

	(void)state;
	lslot(m, 0)->seq = lslot(m, 0)->seq_end = 4;
	lslot(m, 0)->tid = 100;
	lslot(m, 0)->state = SEG_LSLOT_LIVE;
	lslot(m, 0)->changes = 2;
	lslot(m, 0)->ring[1].ns = 5000;
	lslot(m, 0)->ring[1].set = 1;
	lslot(m, 1)->seq = lslot(m, 1)->seq_end = 3;
	hdr(m)->lslot_count = 99;
	assert_int_equal(segment_copy_slots(&c, mem_read, m, BASE, m->len, NULL, why, sizeof(why)), 0);
	assert_int_equal(c.nslots, 1);
	assert_int_equal(c.slots_torn, 1);
	assert_int_equal(c.slots[0].tid, 100);
	assert_int_equal(c.slots[0].ring[1].ns, 5000);
	assert_int_equal(c.n, 0); /* no buckets in a slots copy */
	segment_release(&c);
	lslot(m, 1)->seq = lslot(m, 1)->seq_end = 6;
	lslot(m, 1)->state = 7; /* no such state */
	assert_int_equal(segment_copy_slots(&c, mem_read, m, BASE, m->len, NULL, why, sizeof(why)), 0);
	assert_int_equal(c.nslots, 1);
	segment_release(&c);
	drop(m);
}

/*
 * A copy made with the previous one: its sets are taken over and only new
 * ones read; unchanged slots are not copied again, a slot with new changes
 * or a new owner is; a torn slot is read again next time.
 */
static void test_slots_incremental(void **state)
{
	struct mem *m = make(2);
	struct seg_copy a, b;
	char why[256];
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		lslot(m, i)->seq = lslot(m, i)->seq_end = 4;
		lslot(m, i)->tid = 100 + (uint32_t)i;
		lslot(m, i)->state = SEG_LSLOT_LIVE;
		lslot(m, i)->changes = 1;
	}
	hdr(m)->lslot_count = 2;
	lset(m, 0)->n = 1;
	memcpy(lset(m, 0)->pair[0].key, "endpoint", 9);
	hdr(m)->labelset_count = 1;
	assert_int_equal(segment_copy_slots(&a, mem_read, m, BASE, m->len, NULL, why, sizeof(why)), 0);
	assert_int_equal(a.nslots, 2);
	assert_int_equal(a.nsets, 1);

	/* Nothing moved: no slot copied, the set taken over. */
	assert_int_equal(segment_copy_slots(&b, mem_read, m, BASE, m->len, &a, why, sizeof(why)), 0);
	assert_int_equal(b.nslots, 0);
	assert_int_equal(b.nsets, 1);
	assert_null(a.sets);
	assert_string_equal(segment_labelset(&b, 1)->pair[0].key, "endpoint");
	segment_release(&a);

	/* Slot 1 changed, slot 0 got a new owner, a set was published. */
	lslot(m, 1)->changes = 2;
	lslot(m, 1)->ring[1].set = 2;
	lslot(m, 0)->tid = 200;
	lset(m, 1)->n = 1;
	memcpy(lset(m, 1)->pair[0].key, "tenant", 7);
	hdr(m)->labelset_count = 2;
	assert_int_equal(segment_copy_slots(&a, mem_read, m, BASE, m->len, &b, why, sizeof(why)), 0);
	assert_int_equal(a.nslots, 2);
	assert_int_equal(a.slots[0].tid, 200);
	assert_int_equal(a.slots[1].ring[1].set, 2);
	assert_int_equal(a.nsets, 2);
	assert_string_equal(segment_labelset(&a, 1)->pair[0].key, "endpoint");
	assert_string_equal(segment_labelset(&a, 2)->pair[0].key, "tenant");
	segment_release(&b);

	/* A slot torn now (its lock odd) is left out, and read again once whole. */
	lslot(m, 1)->changes = 3;
	lslot(m, 1)->seq = lslot(m, 1)->seq_end = 5;
	assert_int_equal(segment_copy_slots(&b, mem_read, m, BASE, m->len, &a, why, sizeof(why)), 0);
	assert_int_equal(b.nslots, 0);
	assert_int_equal(b.slots_torn, 1);
	segment_release(&a);
	lslot(m, 1)->seq = lslot(m, 1)->seq_end = 6;
	assert_int_equal(segment_copy_slots(&a, mem_read, m, BASE, m->len, &b, why, sizeof(why)), 0);
	assert_int_equal(a.nslots, 1);
	assert_int_equal(a.slots[0].changes, 3);
	segment_release(&b);

	/* Another segment (a new process image): prev is not used. */
	hdr(m)->created_ns++;
	assert_int_equal(segment_copy_slots(&b, mem_read, m, BASE, m->len, &a, why, sizeof(why)), 0);
	assert_int_equal(b.nslots, 2);
	assert_non_null(a.sets);
	segment_release(&a);
	segment_release(&b);
	drop(m);
}

/* Hostile label table fields: refused as a whole, never read past the mapping. */
static void test_bad_label_headers(void **state)
{
	static const uint64_t evil[] = { 0, 1, 4095, UINT32_MAX, UINT64_MAX / 2, UINT64_MAX };
	struct seg_copy c;
	size_t f, i;

	(void)state;
	for (f = 0; f < 5; f++) {
		for (i = 0; i < sizeof(evil) / sizeof(evil[0]); i++) {
			struct mem *m = make(3);
			struct seg_header *h = hdr(m);

			switch (f) {
			case 0: h->labelset_off = evil[i]; break;
			case 1: h->labelset_cap = evil[i]; break;
			case 2: h->lslot_off = evil[i]; break;
			case 3: h->lslot_cap = evil[i]; break;
			case 4: h->labelset_size = (uint32_t)evil[i]; break;
			}
			if (copy(m, &c) == 0) {
				assert_true(c.h.labelset_cap <= (m->len - c.h.labelset_off) /
								  sizeof(struct seg_labelset));
				assert_true(c.h.lslot_cap <= (m->len - c.h.lslot_off) /
							       sizeof(struct seg_lslot));
				segment_release(&c);
			}
			drop(m);
		}
	}
}

/* Layout 3: no label tables, its shorter header, every bucket's labels 0. */
static void test_layout3(void **state)
{
	struct mem *m = make(3);
	struct seg_copy c;

	(void)state;
	hdr(m)->version = 3;
	hdr(m)->header_size = SEG_HEADER_V3_SIZE;
	bucket(m, 0)->labels = 9; /* layout 3's reserved word: not a set */
	assert_int_equal(copy(m, &c), 0);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.b[0].labels, 0);
	assert_int_equal(c.nsets, 0);
	assert_int_equal(c.h.labelset_cap, 0);
	segment_release(&c);
	hdr(m)->header_size = sizeof(struct seg_header); /* a layout-3 header of the wrong size */
	assert_int_equal(copy(m, &c), -1);
	drop(m);
}

static void test_read_fails(void **state)
{
	struct mem *m = make(5);
	struct seg_copy c;

	(void)state;
	m->fail = 1;
	assert_int_equal(copy(m, &c), -1);
	drop(m);
}

/*
 * A forged segment as large as a header may claim (SEG_MAX_BUCKETS
 * buckets, SEGMENT_MAX_LABEL_ROWS sets and slots), made up by the read
 * callback: bucket i is valid with 64 frames of its own, sets name
 * keys, slots name threads. Counts the bytes asked for.
 */
struct forged {
	struct seg_header h;
	uint64_t asked;
	uint64_t pcs;    /* where its frames start */
};

static void forged_bucket(uint64_t i, struct seg_bucket *b, uint64_t pcs)
{
	uint32_t j;

	memset(b, 0, sizeof(*b));
	b->kind = SEG_KIND_ALLOC;
	b->nframes = SEG_MAX_FRAMES;
	b->labels = (uint32_t)(i % 1000) + 1;
	b->alloc_samples = 1;
	b->alloc_objects = 1.0;
	for (j = 0; j < SEG_MAX_FRAMES; j++)
		b->frames[j] = pcs + (i * SEG_MAX_FRAMES + j) * 16;
}

static int forged_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct forged *f = ctx;
	const struct seg_header *h = &f->h;
	uint64_t off = addr - BASE, i, e;
	unsigned char *out = buf;
	struct seg_bucket b;

	f->asked += n;
	if (addr < BASE || off > h->size || n > h->size - off)
		return -1;
	memset(buf, 0, n);
	if (off < sizeof(*h))
		memcpy(out, (const char *)h + off, n < sizeof(*h) - off ? n : sizeof(*h) - off);
	/* Whole buckets only (the reader never reads part of one but its seq). */
	for (i = off >= h->bucket_off ? (off - h->bucket_off) / sizeof(b) : 0;
	     i < h->bucket_cap; i++) {
		e = h->bucket_off + i * sizeof(b);
		if (e >= off + n)
			break;
		forged_bucket(i, &b, f->pcs);
		if (e >= off && e + sizeof(b) <= off + n)
			memcpy(out + (e - off), &b, sizeof(b));
	}
	for (i = off >= h->lslot_off ? (off - h->lslot_off) / sizeof(struct seg_lslot) : 0;
	     i < h->lslot_cap; i++) {
		e = h->lslot_off + i * sizeof(struct seg_lslot);
		if (e >= off + n)
			break;
		if (e >= off && e + 24 <= off + n) {
			struct seg_lslot *sl = (struct seg_lslot *)(out + (e - off));

			sl->tid = (uint32_t)i + 1;
			sl->state = SEG_LSLOT_LIVE;
			sl->changes = SEG_LABEL_RING;
		}
	}
	return 0;
}

/* A forged header as large as the layout allows, frames from pcs on. */
static struct forged *forge(uint64_t pcs)
{
	struct forged *f = calloc(1, sizeof(*f));
	struct seg_header *h = &f->h;

	f->pcs = pcs;
	memcpy(h->magic, SEG_MAGIC, 8);
	h->version = SEG_VERSION;
	h->header_size = sizeof(*h);
	h->max_frames = SEG_MAX_FRAMES;
	h->bucket_size = sizeof(struct seg_bucket);
	h->bucket_off = 4096;
	h->bucket_cap = h->bucket_count = SEG_MAX_BUCKETS;
	h->labelset_off = h->bucket_off + SEG_MAX_BUCKETS * sizeof(struct seg_bucket);
	h->labelset_cap = h->labelset_count = SEGMENT_MAX_LABEL_ROWS;
	h->labelset_size = sizeof(struct seg_labelset);
	h->lslot_off = h->labelset_off + SEGMENT_MAX_LABEL_ROWS * sizeof(struct seg_labelset);
	h->lslot_cap = h->lslot_count = SEGMENT_MAX_LABEL_ROWS;
	h->lslot_size = sizeof(struct seg_lslot);
	h->size = h->lslot_off + SEGMENT_MAX_LABEL_ROWS * sizeof(struct seg_lslot);
	return f;
}

static void test_forged_huge(void **state)
{
	struct forged *f = forge(0x100000);
	struct seg_header *h = &f->h;
	struct seg_copy c, d;
	char why[256];
	uint64_t most;

	(void)state;
	assert_int_equal(segment_copy(&c, forged_read, f, BASE, h->size, why, sizeof(why)), 0);
	assert_true(c.n > 0);
	assert_true(c.n <= SEGMENT_MAX_READ_BUCKETS);
	assert_true(c.n * SEG_MAX_FRAMES <= SEGMENT_MAX_READ_PCS); /* every frame distinct */
	assert_true(c.capped > 0);
	assert_int_equal(c.nsets, SEGMENT_MAX_READ_SETS);
	assert_true(c.sets_capped > 0);
	/* Read: the buckets kept and the next chunk, twice, and the sets. */
	most = 2 * (c.n + c.capped % SEGMENT_CHUNK + 2 * SEGMENT_CHUNK) * sizeof(struct seg_bucket) +
	       SEGMENT_MAX_READ_SETS * sizeof(struct seg_labelset) + sizeof(*h);
	assert_true(f->asked <= most + c.torn * sizeof(struct seg_bucket));
	assert_true(c.held <= SEGMENT_MAX_HELD);
	assert_true(segment_held_bytes() == c.held);
	f->asked = 0;
	assert_int_equal(segment_copy_slots(&d, forged_read, f, BASE, h->size, NULL, why,
					    sizeof(why)), 0);
	assert_true(d.nslots <= SEGMENT_MAX_READ_SLOTS);
	assert_true(d.slots_capped > 0);
	assert_true(segment_held_bytes() == c.held + d.held);
	assert_true(segment_held_bytes() <= SEGMENT_MAX_HELD);
	segment_release(&d);
	segment_release(&c);
	assert_int_equal(segment_held_bytes(), 0);
	free(f);
}

/*
 * Copies held at once (--children's processes, -d's two copies) share
 * one budget of distinct (process, address) pairs: each process up to
 * SEGMENT_MAX_READ_PCS, all together SEGMENT_MAX_HELD_PCS; a second copy
 * of the same process adds nothing new; the budget is whole again once
 * the copies are released.
 */
static void test_forged_shared_budget(void **state)
{
	struct forged *f = forge(0x100000), *g = forge(0x100000), *k = forge(0x7f0000000000ull);
	struct seg_copy a, b, c, d;
	char why[256];

	(void)state;
	assert_int_equal(segment_copy(&a, forged_read, f, BASE, f->h.size, why, sizeof(why)), 0);
	assert_int_equal(a.n * SEG_MAX_FRAMES, SEGMENT_MAX_READ_PCS);
	/* Another process, the same addresses: its own locations, its own share. */
	assert_int_equal(segment_copy(&b, forged_read, g, BASE, g->h.size, why, sizeof(why)), 0);
	assert_int_equal((a.n + b.n) * SEG_MAX_FRAMES, SEGMENT_MAX_HELD_PCS);
	assert_int_equal(segment_copy(&c, forged_read, k, BASE, k->h.size, why, sizeof(why)), 0);
	assert_int_equal(c.n, 0); /* the budget is spent */
	assert_true(c.capped > 0);
	assert_int_equal(segment_copy(&d, forged_read, f, BASE, f->h.size, why, sizeof(why)), 0);
	assert_int_equal(d.n, a.n); /* the same process again (-d): nothing new */
	segment_release(&a);
	segment_release(&b);
	segment_release(&c);
	segment_release(&d);
	assert_int_equal(segment_copy(&c, forged_read, k, BASE, k->h.size, why, sizeof(why)), 0);
	assert_int_equal(c.n * SEG_MAX_FRAMES, SEGMENT_MAX_READ_PCS);
	segment_release(&c);
	free(f);
	free(g);
	free(k);
}

/* Random garbage in every byte of header and buckets: never a crash. */
static void test_fuzz(void **state)
{
	struct seg_copy c;
	uint64_t x = 88172645463325252ull;
	int round;
	size_t i;

	(void)state;
	for (round = 0; round < 2000; round++) {
		struct mem *m = make(5);

		for (i = 0; i < 16; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			m->data[(x >> 8) % m->len] ^= (unsigned char)x;
		}
		if (round % 3 == 0)
			memcpy(hdr(m)->magic, SEG_MAGIC, 8);
		if (round % 5 == 0)
			hdr(m)->version = SEG_VERSION;
		if (copy(m, &c) == 0) {
			for (i = 0; i < c.n; i++) {
				assert_true(c.b[i].nframes <= SEG_MAX_FRAMES);
				assert_true(c.b[i].seq == c.b[i].seq_end && !(c.b[i].seq & 1));
			}
			segment_release(&c);
		}
		drop(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_count_past_cap),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_torn_then_whole),
		cmocka_unit_test(test_torn_forever),
		cmocka_unit_test(test_changed_between_copies),
		cmocka_unit_test(test_malformed_buckets),
		cmocka_unit_test(test_wait_buckets),
		cmocka_unit_test(test_wait_buckets_malformed),
		cmocka_unit_test(test_version_2),
		cmocka_unit_test(test_wait_enabled),
		cmocka_unit_test(test_base_of),
		cmocka_unit_test(test_read_fails),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_slots_incremental),
		cmocka_unit_test(test_bad_label_headers),
		cmocka_unit_test(test_layout3),
		cmocka_unit_test(test_forged_huge),
		cmocka_unit_test(test_forged_shared_budget),
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
