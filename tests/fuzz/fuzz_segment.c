/*
 * fuzz_segment.c — libFuzzer harness for the reader of libcprof.so's
 * segment (attach/source/segment.c): the input is the segment's bytes as the
 * target's memory would hold them. Run by `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attach/source/segment.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = { data, size };
	struct seg_copy c;
	char why[256];
	size_t i;

	if (segment_copy(&c, mem_read, &m, BASE, size, why, sizeof(why)) == 0) {
		for (i = 0; i < c.n; i++)
			if (c.b[i].nframes > SEG_MAX_FRAMES || (c.b[i].seq & 1))
				__builtin_trap();
		segment_release(&c);
	}
	return 0;
}
