/*
 * fuzz_segment.c — libFuzzer harness for the reader of libcprof.so's
 * segment (attach/source/segread.c): the input is the segment's bytes as the
 * target's memory would hold them, read both ways: whole (header, buckets,
 * label sets) and as the label reader does (header, slots, sets). Run by
 * `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attach/source/segread.h"

#define BASE 0x7f0000001000ull

struct mem {
	const uint8_t *data;
	size_t len;
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	const struct mem *m = ctx;

	if (addr < BASE || addr - BASE > m->len || n > m->len - (addr - BASE))
		return -1;
	memcpy(buf, m->data + (addr - BASE), n);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every copied set is usable as is: at most SEG_LABEL_PAIRS pairs, strings terminated. */
static void check_sets(const struct seg_copy *c)
{
	const struct seg_labelset *s;
	size_t i, k;

	for (i = 1; i <= c->nsets; i++) {
		if (!(s = segment_labelset(c, (uint32_t)i)))
			continue;
		if (s->n > SEG_LABEL_PAIRS)
			__builtin_trap();
		for (k = 0; k < s->n; k++)
			if (strlen(s->pair[k].key) >= SEG_LABEL_KEY ||
			    strlen(s->pair[k].value) >= SEG_LABEL_VALUE)
				__builtin_trap();
	}
}

/* What a slots copy promises: every slot whole, in a known state; seen[] sized to match. */
static void check_slots(const struct seg_copy *c)
{
	size_t i;

	for (i = 0; i < c->nslots; i++)
		if (c->slots[i].seq != c->slots[i].seq_end || (c->slots[i].seq & 1) ||
		    c->slots[i].state > SEG_LSLOT_EXITED)
			__builtin_trap();
	if (c->nslots > c->nseen)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = { data, size };
	struct seg_copy c;
	struct seg_copy d;
	char why[256];
	size_t i;

	if (segment_copy(&c, mem_read, &m, BASE, size, why, sizeof(why)) == 0) {
		for (i = 0; i < c.n; i++)
			if (c.b[i].nframes > SEG_MAX_FRAMES || (c.b[i].seq & 1) ||
			    c.b[i].labels > c.nsets)
				__builtin_trap();
		check_sets(&c);
		segment_release(&c);
	}
	if (segment_copy_slots(&c, mem_read, &m, BASE, size, NULL, why, sizeof(why)) == 0) {
		check_slots(&c);
		check_sets(&c);
		/* Again with the first copy as prev: the incremental path on the same bytes. */
		if (segment_copy_slots(&d, mem_read, &m, BASE, size, &c, why, sizeof(why)) == 0) {
			check_slots(&d);
			check_sets(&d);
			segment_release(&d);
		}
		segment_release(&c);
	}
	return 0;
}
