/*
 * minidebug.c — .gnu_debugdata to an ELF image: one liblzma stream
 * decoder fed the whole section, its output grown by doubling up to a
 * limit, then adopted by elf_image_adopt() (no second copy). The limit is
 * the smaller of MINIDEBUG_MAX_OUT and what is left of
 * MINIDEBUG_MAX_TOTAL, the bytes that the decoded images of the process
 * may hold at once: each image is charged its size and gives it back when
 * it is freed. A stream whose index declares more than the limit is not
 * decoded at all. Past a limit the object keeps no MiniDebugInfo, and the
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

/*
 * The uncompressed size that the stream's index declares (xz ends in a
 * footer pointing back at an index of its blocks), read without decoding;
 * UINT64_MAX when it cannot be read. A lie is caught by the decode limit.
 */
static uint64_t declared_size(const unsigned char *xz, size_t len)
{
	lzma_stream_flags flags;
	lzma_index *idx = NULL;
	uint64_t memlimit = DECODER_MEMLIMIT, size;
	size_t pos = 0;

	if (len < 2 * LZMA_STREAM_HEADER_SIZE ||
	    lzma_stream_footer_decode(&flags, xz + len - LZMA_STREAM_HEADER_SIZE) != LZMA_OK ||
	    flags.backward_size > len - 2 * LZMA_STREAM_HEADER_SIZE)
		return UINT64_MAX;
	if (lzma_index_buffer_decode(&idx, &memlimit, NULL,
				     xz + len - LZMA_STREAM_HEADER_SIZE - flags.backward_size, &pos,
				     flags.backward_size) != LZMA_OK)
		return UINT64_MAX;
	size = lzma_index_uncompressed_size(idx);
	lzma_index_end(idx, NULL);
	return size;
}

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
	uint64_t vaddr, declared;
	const char *name;
	int z, over;

	if (!img || elf_image_section(img, ".gnu_debugdata", &sec, &len, &vaddr, &z) < 0 || z)
		return NULL;
	name = elf_image_name(img)[0] ? elf_image_name(img) : "an object";
	live = atomic_load(&minidebug_live);
	limit = live < MINIDEBUG_MAX_TOTAL ? MINIDEBUG_MAX_TOTAL - live : 0;
	if (limit > MINIDEBUG_MAX_OUT)
		limit = MINIDEBUG_MAX_OUT;
	/* Refuse by the declared size before decoding; the limit holds a liar to it. */
	declared = declared_size(sec, len);
	over = declared != UINT64_MAX && declared > limit;
	mini = limit && !over ? decode(sec, len, limit, &over) : NULL;
	if (!limit || (!mini && over)) {
		if (limit == MINIDEBUG_MAX_OUT ||
		    (declared != UINT64_MAX && declared > MINIDEBUG_MAX_OUT))
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
