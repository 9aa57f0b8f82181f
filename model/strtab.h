#ifndef CPROF_STRTAB_H
#define CPROF_STRTAB_H
/*
 * strtab — the interned string table of a profile, private to model/.
 *
 * Invariants:
 *  - index 0 is "" from strtab_init() on; each distinct string is stored
 *    once, and its index never changes;
 *  - strs[0..n) point at NUL-terminated copies that never move, so the
 *    array can be handed to an encoder as it is;
 *  - at most PROFILE_MAX_STRINGS strings and STRTAB_MAX_BYTES bytes.
 */
#include <stddef.h>
#include <stdint.h>

#include "model/arena.h"
#include "model/hash.h"

#define STRTAB_MAX_BYTES ((size_t)256 << 20)

struct strtab {
	char **strs;
	size_t n, cap;
	struct hash index;
	struct arena bytes;
};

/* Start a table holding only "". 0 or -1 (out of memory). */
int strtab_init(struct strtab *t);

/* Free the table's memory; strtab_init() makes it usable again. */
void strtab_release(struct strtab *t);

/* The index of s, added if new; -1 when a cap is reached or memory ran out. */
int64_t strtab_intern(struct strtab *t, const char *s);

/* The index of s, or -1 when it is not in the table. */
int64_t strtab_find(const struct strtab *t, const char *s);

#endif
