/*
 * gzip.c — whole-buffer gzip with zlib, for the pprof writer and reader.
 * Output grows inside the caller's struct buf, so its limit bounds both a
 * huge profile and a decompression bomb; a failure truncates the buffer
 * back to where it was, which is what makes "nothing appended" hold. zlib
 * counts in 32-bit uInt, so input is fed in slices of at most 1 GiB.
 */
#include <limits.h>
#include <string.h>
#include <zlib.h>

#include "writer/gzip.h"

#define GZIP_SLICE ((size_t)1 << 30) /* below UINT_MAX */
#define GZIP_STEP ((size_t)64 * 1024) /* output room asked for per round */

/* Undo a partial append: back to len bytes, NUL-terminated as buf promises. */
static int gzip_fail(struct buf *out, size_t len)
{
	out->len = len;
	if (out->data)
		out->data[len] = 0;
	return -1;
}

/*
 * Give zlib the next slice of input and the free room of out. At the limit,
 * inflate still gets a call with no room (pointing at a dummy byte), since
 * the gzip trailer after the last output byte takes input but no output;
 * deflate has nothing to gain from it, so for it a full buffer fails here.
 */
static int gzip_feed(z_stream *z, const unsigned char **in, size_t *left, struct buf *out,
		     int may_be_full)
{
	static unsigned char dummy;
	size_t room;

	if (z->avail_in == 0 && *left) {
		size_t n = *left < GZIP_SLICE ? *left : GZIP_SLICE;

		z->next_in = (unsigned char *)*in;
		z->avail_in = (uInt)n;
		*in += n;
		*left -= n;
	}
	room = out->limit - out->len < GZIP_STEP ? out->limit - out->len : GZIP_STEP;
	if (room == 0) {
		z->next_out = &dummy;
		z->avail_out = 0;
		return may_be_full ? 0 : -1;
	}
	if (buf_reserve(out, room) < 0)
		return -1;
	room = out->cap - 1 - out->len; /* all of it, minus the NUL buf keeps */
	if (room > out->limit - out->len)
		room = out->limit - out->len;
	if (room > GZIP_SLICE)
		room = GZIP_SLICE;
	z->next_out = out->data + out->len;
	z->avail_out = (uInt)room;
	return 0;
}

int gzip_compress(const void *in, size_t n, struct buf *out)
{
	const unsigned char *next = in;
	size_t start = out->len, left = n;
	z_stream z;
	int r;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	do {
		size_t before;

		if (gzip_feed(&z, &next, &left, out, 0) < 0)
			goto err;
		before = z.avail_out;
		r = deflate(&z, left ? Z_NO_FLUSH : Z_FINISH);
		if (r == Z_STREAM_ERROR)
			goto err;
		out->len += before - z.avail_out;
	} while (r != Z_STREAM_END);
	deflateEnd(&z);
	out->data[out->len] = 0;
	return 0;
err:
	deflateEnd(&z);
	return gzip_fail(out, start);
}

int gzip_decompress(const void *in, size_t n, struct buf *out)
{
	const unsigned char *next = in;
	size_t start = out->len, left = n;
	z_stream z;
	int r;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return -1;
	for (;;) {
		size_t before;

		if (gzip_feed(&z, &next, &left, out, 1) < 0)
			goto err;
		before = z.avail_out;
		r = inflate(&z, Z_NO_FLUSH);
		out->len += before - z.avail_out;
		if (r == Z_STREAM_END) {
			/* Concatenated members are one gzip stream (RFC 1952);
			 * anything else after the end is garbage. */
			if (z.avail_in == 0 && left == 0)
				break;
			if (!gzip_is_gzip(z.next_in, z.avail_in) || inflateReset(&z) != Z_OK)
				goto err;
			continue;
		}
		/* No progress: the input ended early, or out is at its limit. */
		if (r == Z_BUF_ERROR && ((z.avail_in == 0 && left == 0) || z.avail_out == 0))
			goto err;
		if (r != Z_OK && r != Z_BUF_ERROR)
			goto err;
	}
	inflateEnd(&z);
	if (out->data)
		out->data[out->len] = 0;
	return 0;
err:
	inflateEnd(&z);
	return gzip_fail(out, start);
}

int gzip_is_gzip(const void *data, size_t n)
{
	const unsigned char *d = data;

	return n >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}
