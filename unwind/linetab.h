#ifndef CPROF_LINETAB_H
#define CPROF_LINETAB_H
/*
 * linetab — the source lines already resolved for one ELF file, named by
 * a key (its GNU build ID and its identity, unwind/linecache.h; "the
 * build ID" below): for an address (an ELF virtual address), exactly the
 * inline chain dwlines_lookup() gave for it, innermost first (zero frames
 * when the DWARF did not cover it), and the bytes of the cache file that
 * keeps such a table from one run to the next (unwind/linecache.h).
 *
 * The file, little-endian:
 *
 *   0  "CPRFLINE"                        magic
 *   8  u32 version (LINETAB_VERSION)
 *  12  u32 B, the build ID's length      1..LINETAB_MAX_BUILD_ID
 *  16  u32 E entries, u32 F frames, u32 S bytes of strings, u32 0
 *  32  u64 FNV-1a of every byte from 40 to the end
 *  40  the key, B bytes of lowercase hex and '-'
 *      E entries of 16 bytes: u64 address, u32 first frame, u32 frames
 *      F frames of 16 bytes: u32 name, u32 file (offsets in the
 *        strings), u32 declaration line, u32 line
 *      S bytes of NUL-terminated strings
 *
 * Invariants:
 *  - a file is untrusted input (any process of the user may have written
 *    anything there): linetab_merge() checks every byte and takes a file
 *    whole or not at all: the exact length, the magic, the version, the
 *    build ID it was asked for, the counts under the caps, the checksum,
 *    addresses strictly increasing, each entry's frames inside the frame
 *    table and at most DWLINES_MAX_FRAMES, each string offset inside the
 *    strings with its NUL less than DWLINES_MAX_NAME bytes on, each line
 *    at most INT32_MAX;
 *  - a table holds at most LINETAB_MAX_ENTRIES addresses,
 *    LINETAB_MAX_FRAMES frames and LINETAB_MAX_STRINGS bytes of strings,
 *    so its file is at most LINETAB_MAX_BYTES: past a cap, puts and merges
 *    keep what they have and add nothing more;
 *  - an address, once in a table, keeps its chain (a put or merge never
 *    replaces one);
 *  - the strings a lookup returns live as long as the table;
 *  - bump LINETAB_VERSION when the layout changes or when dwlines starts
 *    answering differently for the same DWARF: files of another version
 *    are then ignored, and replaced by the next write;
 *  - not thread-safe.
 */
#include <stddef.h>
#include <stdint.h>

#include "unwind/dwlines.h"

#define LINETAB_VERSION 2 /* 2: keys name the object's identity too (linecache.h) */
#define LINETAB_MAX_BUILD_ID 128
#define LINETAB_MAX_ENTRIES (1u << 17)  /* addresses of one file */
#define LINETAB_MAX_FRAMES (1u << 19)   /* frames of their chains */
#define LINETAB_MAX_STRINGS (8u << 20)  /* bytes of names and paths */
#define LINETAB_HEADER 40
#define LINETAB_MAX_BYTES                                                               \
	(LINETAB_HEADER + LINETAB_MAX_BUILD_ID + 16ull * LINETAB_MAX_ENTRIES +            \
	 16ull * LINETAB_MAX_FRAMES + LINETAB_MAX_STRINGS)

struct buf;
struct linetab;

/*
 * Whether build_id can name a table: 2..LINETAB_MAX_BUILD_ID lowercase
 * hex digits and '-', not starting with '-' (a file name: no '/', no '.').
 */
int linetab_key_ok(const char *build_id);

/*
 * An empty table for build_id (copied); NULL when it is not a usable key
 * or memory runs out. linetab_new() and linetab_free() are a pair.
 */
struct linetab *linetab_new(const char *build_id);

/* Free a table and its strings; NULL is fine. */
void linetab_free(struct linetab *t);

/* The build ID it was made for. */
const char *linetab_build_id(const struct linetab *t);

/* Addresses it holds. */
size_t linetab_count(const struct linetab *t);

/*
 * The chain of vaddr into out[0..max) and its length into *n: 1 when the
 * table has vaddr (*n may be 0: the DWARF does not cover it), else 0.
 */
int linetab_get(const struct linetab *t, uint64_t vaddr, struct dwlines_frame *out, size_t max,
		size_t *n);

/*
 * Add vaddr's chain f[0..n) (n <= DWLINES_MAX_FRAMES; the strings are
 * copied). 0 when added, 1 when vaddr was there already (nothing
 * changes), -1 when a cap or memory stops it.
 */
int linetab_put(struct linetab *t, uint64_t vaddr, const struct dwlines_frame *f, size_t n);

/*
 * Add the entries of a cache file's bytes data[0..len) that t does not
 * hold, as far as the caps allow, counting them in *added. 0, or -1 when
 * the bytes are not a valid file of t's build ID and version (t is then
 * unchanged).
 */
int linetab_merge(struct linetab *t, const void *data, size_t len, size_t *added);

/* Append t as a cache file to b, addresses in order. 0 or -1 (b's limit, memory). */
int linetab_write(const struct linetab *t, struct buf *b);

#endif
