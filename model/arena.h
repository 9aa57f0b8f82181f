#ifndef CPROF_ARENA_H
#define CPROF_ARENA_H
/*
 * arena — memory for the model, private to model/: a bump allocator for the
 * variable-length parts of entries (string bytes, lines, stacks, values,
 * labels). The arrays of fixed-size entries grow with array_grow()
 * (common/array.h).
 *
 * Invariants:
 *  - memory from arena_alloc() never moves and lives until
 *    arena_release(), so entries may point into it while their arrays are
 *    reallocated;
 *  - allocations are aligned for any type;
 *  - the arena never holds more than its limit in bytes; an allocation past
 *    it fails (NULL, errno EFBIG) and leaves the arena as it was.
 */
#include <stddef.h>

struct arena_chunk;

struct arena {
	struct arena_chunk *head; /* the chunk being filled; older ones follow */
	size_t total;             /* bytes of all chunks */
	size_t limit;
};

/* Start an empty arena that may hold at most limit bytes. */
void arena_init(struct arena *a, size_t limit);

/* Free every chunk; the arena is empty and reusable with the same limit. */
void arena_release(struct arena *a);

/* n bytes (n > 0), uninitialized; NULL when past the limit or out of memory. */
void *arena_alloc(struct arena *a, size_t n);

#endif
