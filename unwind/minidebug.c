/*
 * minidebug.c — .gnu_debugdata to an ELF image: one liblzma stream
 * decoder fed the whole section, its output grown by doubling up to a
 * limit, then adopted by elf_image_adopt() (no second copy). The limit is
 * the smaller of MINIDEBUG_MAX_OUT and what is left of
 * MINIDEBUG_MAX_TOTAL, the bytes that the decoded images of the process
 * may hold at once: each image is charged its size and gives it back when
 * it is freed. Past a limit the object keeps no MiniDebugInfo, and the
 * caller is told which cap it hit (one note per object, the total's once).
 */
#include <lzma.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/err.h"
#include "unwind/elfimg.h"
#include "unwind/minidebug.h"

#define DECODER_MEMLIMIT (128u << 20)

static _Atomic size_t minidebug_live; /* bytes held by decoded images */
static atomic_int total_noted;

/* Decode into at most limit bytes. *over is set when the stream is longer. */
static struct elf_image *decode(const unsigned char *xz, size_t len, size_t limit, int *over)
{
	lzma_stream s = LZMA_STREAM_INIT;
	struct elf_image *img = NULL;
	unsigned char *out = NULL, *grown;
	size_t cap = 0;
	lzma_ret r;

	*over = 0;
	if (!xz || len < 12 || lzma_stream_decoder(&s, DECODER_MEMLIMIT, 0) != LZMA_OK)
		return NULL;
	s.next_in = xz;
	s.avail_in = len;
	for (;;) {
		if (s.avail_out == 0) {
			size_t ncap = cap ? cap * 2 : (len * 4 < 65536 ? 65536 : len * 4);

			if (ncap > limit)
				ncap = limit;
			if (ncap <= cap) {
				*over = 1; /* more output than the limit allows */
				goto out;
			}
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
	lzma_end(&s);
	return elf_image_adopt(out, (size_t)s.total_out);
out:
	lzma_end(&s);
	free(out);
	return img;
}

struct elf_image *minidebug_decode(const unsigned char *xz, size_t len)
{
	int over;

	return decode(xz, len, MINIDEBUG_MAX_OUT, &over);
}

struct elf_image *minidebug_open(const struct elf_image *img)
{
	const unsigned char *sec;
	struct elf_image *mini;
	size_t len, live, limit, size;
	const char *name;
	uint64_t vaddr;
	int z, over;

	if (!img || elf_image_section(img, ".gnu_debugdata", &sec, &len, &vaddr, &z) < 0 || z)
		return NULL;
	name = elf_image_name(img)[0] ? elf_image_name(img) : "an object";
	live = atomic_load(&minidebug_live);
	limit = live < MINIDEBUG_MAX_TOTAL ? MINIDEBUG_MAX_TOTAL - live : 0;
	if (limit > MINIDEBUG_MAX_OUT)
		limit = MINIDEBUG_MAX_OUT;
	mini = limit ? decode(sec, len, limit, &over) : NULL;
	if (!limit || (!mini && over)) {
		if (limit == MINIDEBUG_MAX_OUT)
			note("%s: its MiniDebugInfo (.gnu_debugdata) decompresses to more than %u MiB, "
			     "the cap per object: its static functions stay unnamed",
			     name, MINIDEBUG_MAX_OUT >> 20);
		else if (!atomic_exchange(&total_noted, 1))
			note("%s: MiniDebugInfo (.gnu_debugdata) of this run would hold more than %u MiB, "
			     "the cap across objects: its static functions and those of later objects "
			     "stay unnamed",
			     name, MINIDEBUG_MAX_TOTAL >> 20);
		return NULL;
	}
	if (!mini)
		return NULL;
	size = elf_image_size(mini);
	if (atomic_fetch_add(&minidebug_live, size) + size > MINIDEBUG_MAX_TOTAL) {
		/* Another thread decoded at the same time: the total still holds. */
		atomic_fetch_sub(&minidebug_live, size);
		elf_image_free(mini);
		return NULL;
	}
	elf_image_charge(mini, &minidebug_live, size);
	elf_image_set_name(mini, name);
	return mini;
}
