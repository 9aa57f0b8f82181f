/*
 * segseeds — writes the fuzz corpus seeds of the segment reader
 * (tests/fuzz/corpus/segment/seed-*) in the layout this build knows
 * (shim/segment.h), so that a layout change regenerates them instead of
 * leaving seeds the reader refuses at its header check:
 *   seed-0  a header only: a rejected setting, a note, no bucket
 *   seed-1  heap buckets (alloc and thread), one truncated
 *   seed-2  block and mutex buckets with their estimates, and the rates
 *   seed-3  one bucket of each kind, one torn, one block bucket with a
 *           non-zero reserved word (left out as invalid)
 *   seed-4  labels: sets (one full, one malformed), labelled buckets (one
 *           naming a set past the table), a whole slot and a torn one
 *   seed-5  the same buckets in layout 3 (a shorter header, no labels)
 * Every layout-4 seed has label tables (NS sets, NL slots) after its
 * buckets. (seed-locks is a real layout-3 segment, copied from
 * tests/targets/locks.)
 * Usage: segseeds DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/segment.h"

#define NB 6
#define NS 4
#define NL 2

static unsigned char buf[sizeof(struct seg_header) + 64 + NB * sizeof(struct seg_bucket) +
			 NS * sizeof(struct seg_labelset) + NL * sizeof(struct seg_lslot)];

static struct seg_header *start(uint64_t nb)
{
	struct seg_header *h = (struct seg_header *)buf;
	size_t off = (sizeof(*h) + 63) / 64 * 64;

	memset(buf, 0, sizeof(buf));
	memcpy(h->magic, SEG_MAGIC, 8);
	h->version = SEG_VERSION;
	h->header_size = sizeof(*h);
	h->size = off + NB * sizeof(struct seg_bucket) + NS * sizeof(struct seg_labelset) +
		  NL * sizeof(struct seg_lslot);
	h->pid = 1234;
	h->max_frames = SEG_MAX_FRAMES;
	h->bucket_size = sizeof(struct seg_bucket);
	h->sample_rate = SEG_DEFAULT_RATE;
	h->bucket_off = off;
	h->bucket_cap = NB;
	h->bucket_count = nb;
	h->block_rate = SEG_DEFAULT_BLOCK_RATE;
	h->mutex_fraction = SEG_DEFAULT_MUTEX_FRACTION;
	h->labelset_off = off + NB * sizeof(struct seg_bucket);
	h->labelset_cap = NS;
	h->labelset_size = sizeof(struct seg_labelset);
	h->lslot_off = h->labelset_off + NS * sizeof(struct seg_labelset);
	h->lslot_cap = NL;
	h->lslot_size = sizeof(struct seg_lslot);
	snprintf(h->allocator, sizeof(h->allocator), "libc.so.6");
	return h;
}

static struct seg_bucket *bucket(struct seg_header *h, size_t i, uint32_t kind, uint32_t nframes)
{
	struct seg_bucket *b = (struct seg_bucket *)(buf + h->bucket_off) + i;
	uint32_t j;

	b->seq = b->seq_end = 2 * (i + 1);
	b->kind = kind;
	b->nframes = nframes;
	b->hash = 0x9E3779B97F4A7C15ull * (i + 1);
	for (j = 0; j < nframes; j++)
		b->frames[j] = 0x555555554000ull + 0x100 * i + 0x10 * j;
	return b;
}

static int put(const char *dir, const char *name, const struct seg_header *h)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "wb")) || fwrite(buf, 1, h->size, f) != h->size || fclose(f) != 0) {
		perror(path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct seg_header *h;
	struct seg_bucket *b;
	struct seg_labelset *s;
	struct seg_lslot *sl;
	unsigned i;
	int bad = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: segseeds DIR\n");
		return 2;
	}
	h = start(0);
	h->nsettings = 1;
	snprintf(h->settings[0].name, sizeof(h->settings[0].name), "CPROF_BLOCK_RATE");
	snprintf(h->settings[0].value, sizeof(h->settings[0].value), "10k");
	h->settings[0].problem = SEG_SETTING_NOT_A_NUMBER;
	h->settings[0].used = SEG_DEFAULT_BLOCK_RATE;
	snprintf(h->note, sizeof(h->note), "nothing sampled yet");
	bad |= put(argv[1], "seed-0", h);

	h = start(3);
	b = bucket(h, 0, SEG_KIND_ALLOC, 5);
	b->alloc_samples = 3;
	b->alloc_sampled_bytes = 3 << 20;
	b->alloc_objects = 3.0;
	b->alloc_bytes = 3.0 * (1 << 20);
	b = bucket(h, 1, SEG_KIND_THREAD, 4);
	b->alloc_samples = b->alloc_objects = 2;
	b = bucket(h, 2, SEG_KIND_ALLOC, SEG_MAX_FRAMES);
	b->flags = SEG_BUCKET_TRUNCATED;
	b->alloc_samples = 1;
	b->free_samples = 1;
	bad |= put(argv[1], "seed-1", h);

	h = start(4);
	h->block_rate = 10000;
	h->mutex_fraction = 10;
	h->waits_untracked = 2;
	b = bucket(h, 0, SEG_KIND_BLOCK, 6);
	b->wait.events = 40;
	b->wait.event_ns = 40000000;
	b->wait.contentions = 40;
	b->wait.delay_ns = 4e7;
	b = bucket(h, 1, SEG_KIND_BLOCK, 3);
	b->wait.events = 5;
	b->wait.event_ns = 10000;
	b->wait.contentions = 25; /* 2 us waits at a 10 us rate: weight 5 */
	b->wait.delay_ns = 50000;
	b = bucket(h, 2, SEG_KIND_MUTEX, 7);
	b->wait.events = 20;
	b->wait.event_ns = 30000000;
	b->wait.contentions = 200;
	b->wait.delay_ns = 3e8;
	b = bucket(h, 3, SEG_KIND_ALLOC, 2);
	b->alloc_samples = 1;
	bad |= put(argv[1], "seed-2", h);

	h = start(NB);
	bucket(h, 0, SEG_KIND_ALLOC, 1)->alloc_samples = 1;
	bucket(h, 1, SEG_KIND_THREAD, 1)->alloc_samples = 1;
	bucket(h, 2, SEG_KIND_BLOCK, 1)->wait.contentions = 1;
	bucket(h, 3, SEG_KIND_MUTEX, 1)->wait.delay_ns = 1;
	b = bucket(h, 4, SEG_KIND_MUTEX, 2);
	b->seq = 7; /* being written: torn */
	b = bucket(h, 5, SEG_KIND_BLOCK, 2);
	b->wait.reserved[0] = 1; /* not 0: invalid */
	bad |= put(argv[1], "seed-3", h);

	h = start(4);
	s = (struct seg_labelset *)(buf + h->labelset_off);
	for (i = 0; i < SEG_LABEL_PAIRS; i++) {
		snprintf(s[0].pair[i].key, sizeof(s[0].pair[i].key), "key%u", i);
		snprintf(s[0].pair[i].value, sizeof(s[0].pair[i].value), "value %u", i);
	}
	s[0].n = SEG_LABEL_PAIRS;
	s[0].flags = SEG_LABELS_TRUNCATED;
	s[1].n = 1;
	snprintf(s[1].pair[0].key, sizeof(s[1].pair[0].key), "endpoint");
	snprintf(s[1].pair[0].value, sizeof(s[1].pair[0].value), "/search");
	s[2].n = SEG_LABEL_PAIRS + 3; /* malformed: emptied */
	h->labelset_count = 3;
	bucket(h, 0, SEG_KIND_ALLOC, 2)->labels = 1;
	bucket(h, 1, SEG_KIND_BLOCK, 2)->labels = 2;
	bucket(h, 2, SEG_KIND_THREAD, 2)->labels = 3;
	bucket(h, 3, SEG_KIND_ALLOC, 2)->labels = 9; /* past the table: invalid */
	sl = (struct seg_lslot *)(buf + h->lslot_off);
	sl[0].seq = sl[0].seq_end = 6;
	sl[0].tid = 4321;
	sl[0].state = SEG_LSLOT_LIVE;
	sl[0].changes = SEG_LABEL_RING + 3; /* wrapped */
	for (i = 0; i < SEG_LABEL_RING; i++) {
		sl[0].ring[i].ns = 1000000 + i;
		sl[0].ring[i].set = i % 3;
	}
	sl[0].cur = 2;
	sl[1].seq = 9; /* being written: torn */
	sl[1].seq_end = 9;
	sl[1].tid = 4322;
	h->lslot_count = NL;
	bad |= put(argv[1], "seed-4", h);

	h = start(3);
	bucket(h, 0, SEG_KIND_ALLOC, 3)->alloc_samples = 1;
	bucket(h, 1, SEG_KIND_BLOCK, 2)->wait.contentions = 2;
	bucket(h, 2, SEG_KIND_THREAD, 1)->alloc_samples = 1;
	h->version = 3;
	h->header_size = SEG_HEADER_V3_SIZE;
	bad |= put(argv[1], "seed-5", h);
	return bad;
}
