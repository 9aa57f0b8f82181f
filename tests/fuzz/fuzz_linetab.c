/*
 * fuzz_linetab.c — libFuzzer harness for the line cache's file parser
 * (unwind/linetab.c): any bytes as a cache file, read for the build ID
 * the bytes themselves name (else a fixed one), as another process might
 * have written it. A file taken must give, for each of its addresses, at
 * most DWLINES_MAX_FRAMES frames whose strings are shorter than
 * DWLINES_MAX_NAME and lines within INT32_MAX; and it must round-trip:
 * written out, read into a fresh table and written again, the bytes are
 * the same. A file refused leaves the table empty. Each input is tried
 * as it is and with its checksum made right, so that mutations reach the
 * structural checks behind it. Run by `make fuzz`;
 * links without libdw (the parser needs only common/).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <stdlib.h>

#include "common/buf.h"
#include "common/fnv.h"
#include "unwind/linetab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void one(const uint8_t *data, size_t size)
{
	char key[LINETAB_MAX_BUILD_ID + 1] = "93ac61ec5a8eb1396f9fbd350e3169a558528a40";
	struct dwlines_frame f[DWLINES_MAX_FRAMES];
	struct linetab *t, *u;
	struct buf a, b;
	size_t added, i, k, n, bid;
	uint32_t ne;

	if (size >= LINETAB_HEADER && (bid = rd32(data + 12)) <= LINETAB_MAX_BUILD_ID &&
	    bid <= size - LINETAB_HEADER) {
		memcpy(key, data + LINETAB_HEADER, bid);
		key[bid] = 0;
		if (!linetab_key_ok(key))
			memcpy(key, "abcd", 5);
	}
	t = linetab_new(key);
	if (!t)
		__builtin_trap();
	if (linetab_merge(t, data, size, &added) < 0) {
		if (linetab_count(t) || added)
			__builtin_trap();
		linetab_free(t);
		return;
	}
	bid = strlen(key);
	ne = rd32(data + 16);
	if (linetab_count(t) != added || added > ne)
		__builtin_trap();
	for (i = 0; i < ne; i++) {
		const uint8_t *e = data + LINETAB_HEADER + bid + 16 * i;
		uint64_t va = rd32(e) | (uint64_t)rd32(e + 4) << 32;

		if (!linetab_get(t, va, f, DWLINES_MAX_FRAMES, &n) || n > DWLINES_MAX_FRAMES ||
		    n != rd32(e + 12))
			__builtin_trap();
		for (k = 0; k < n; k++)
			if (strlen(f[k].name) >= DWLINES_MAX_NAME ||
			    strlen(f[k].file) >= DWLINES_MAX_NAME || f[k].line < 0 ||
			    f[k].line > INT32_MAX || f[k].start_line < 0 || f[k].start_line > INT32_MAX)
				__builtin_trap();
	}
	buf_init(&a, LINETAB_MAX_BYTES);
	buf_init(&b, LINETAB_MAX_BYTES);
	u = linetab_new(key);
	if (linetab_write(t, &a) < 0 || linetab_merge(u, a.data, a.len, &added) < 0 ||
	    added != linetab_count(t) || linetab_write(u, &b) < 0 || a.len != b.len ||
	    memcmp(a.data, b.data, a.len))
		__builtin_trap();
	buf_release(&a);
	buf_release(&b);
	linetab_free(t);
	linetab_free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *c;
	uint64_t h;
	int i;

	one(data, size);
	if (size < LINETAB_HEADER || !(c = malloc(size)))
		return 0;
	memcpy(c, data, size);
	h = fnv_bytes(FNV_OFFSET, c + LINETAB_HEADER, size - LINETAB_HEADER);
	for (i = 0; i < 8; i++)
		c[32 + i] = (uint8_t)(h >> (8 * i));
	one(c, size);
	free(c);
	return 0;
}
