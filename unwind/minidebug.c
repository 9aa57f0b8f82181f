/*
 * minidebug.c — .gnu_debugdata to an ELF image: one liblzma stream
 * decoder fed the whole section, its output grown by doubling up to
 * MINIDEBUG_MAX_OUT, then handed to elf_image_from_mem() (which copies
 * it, so the buffer is freed here).
 */
#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>

#include "unwind/elfimg.h"
#include "unwind/minidebug.h"

#define DECODER_MEMLIMIT (128u << 20)

struct elf_image *minidebug_decode(const unsigned char *xz, size_t len)
{
	lzma_stream s = LZMA_STREAM_INIT;
	struct elf_image *img = NULL;
	unsigned char *out = NULL, *grown;
	size_t cap = 0;
	lzma_ret r;

	if (!xz || len < 12 || lzma_stream_decoder(&s, DECODER_MEMLIMIT, 0) != LZMA_OK)
		return NULL;
	s.next_in = xz;
	s.avail_in = len;
	for (;;) {
		if (s.avail_out == 0) {
			size_t ncap = cap ? cap * 2 : (len * 4 < 65536 ? 65536 : len * 4);

			if (ncap > MINIDEBUG_MAX_OUT)
				ncap = MINIDEBUG_MAX_OUT;
			if (ncap <= cap)
				goto out; /* past the cap */
			grown = realloc(out, ncap);
			if (!grown)
				goto out;
			out = grown;
			s.next_out = out + cap;
			s.avail_out = ncap - cap;
			cap = ncap;
		}
		r = lzma_code(&s, LZMA_FINISH);
		if (r == LZMA_STREAM_END)
			break;
		if (r != LZMA_OK)
			goto out;
	}
	img = elf_image_from_mem(out, (size_t)s.total_out);
out:
	lzma_end(&s);
	free(out);
	return img;
}

struct elf_image *minidebug_open(const struct elf_image *img)
{
	const unsigned char *sec;
	uint64_t vaddr;
	size_t len;
	int z;

	if (!img || elf_image_section(img, ".gnu_debugdata", &sec, &len, &vaddr, &z) < 0 || z)
		return NULL;
	return minidebug_decode(sec, len);
}
