#ifndef CPROF_SHIM_NEXT_H
#define CPROF_SHIM_NEXT_H
/*
 * next — the allocator the program really uses, whoever defines it:
 * glibc, or jemalloc, tcmalloc, mimalloc (or any other) linked into the
 * program. The shim samples on top of it and never mixes its blocks with
 * another allocator's.
 *
 * Invariants:
 *  - every slot of shim_next is always callable: until the real functions
 *    are resolved it holds a bootstrap function, which resolves them
 *    (dlsym(RTLD_NEXT), once, guarded) or, while that is under way (dlsym
 *    allocates; another thread may be resolving), serves the request from
 *    a small static arena (next_boot_owns);
 *  - after resolution every slot is a function of one object, the one that
 *    defines the next malloc: a function it lacks (pvalloc, say) is
 *    emulated on its own aligned allocation, never taken from another
 *    object. When its core (free, calloc, realloc, malloc_usable_size) is
 *    split across objects, or the program bypasses the shim (its own malloc
 *    comes first), the kind is NEXT_PASS: every slot is that function's
 *    own next definition, exactly what the program would call without the
 *    shim, and nothing is sampled;
 *  - arena blocks are page-aligned, never reused and never handed to the
 *    real allocator: the shim's free, realloc and malloc_usable_size test
 *    next_boot_owns on their page-aligned slow path;
 *  - slots are written once, before next_kind is published (release).
 */
#include <stddef.h>

#include "shim/shim.h"

struct shim_next {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*usable)(void *);
};

extern struct shim_next shim_next SHIM_HIDDEN;

/* next_kind() */
enum {
	NEXT_UNRESOLVED = 0,
	NEXT_GLIBC = 1,   /* glibc's malloc: the shim may use its pool and glibc's chunk bits */
	NEXT_FOREIGN = 2, /* another allocator: sampled blocks come from it, 4096-aligned */
	NEXT_PASS = 3,    /* unsupported combination: pass-through, nothing sampled */
};

/*
 * Resolves the next allocator if that has not happened yet. 1 when the
 * slots are final, 0 when resolution is under way (on this thread: a
 * re-entrant call from dlsym; or on another): the caller uses the arena.
 */
int next_resolve(void) SHIM_HIDDEN;

/* 1 when the slots are final (no lookup left to make), without resolving. */
int next_resolved(void) SHIM_HIDDEN;

/*
 * Waits (yielding, bounded) while another thread resolves: before fork,
 * so that no child inherits a resolution that never ends.
 */
void next_wait(void) SHIM_HIDDEN;

/*
 * Set (by inject.c, before the first resolution) when the shim was
 * dlopen'd: the functions are then looked up with dlsym(RTLD_DEFAULT),
 * the program's first definitions, not RTLD_NEXT (from a dlopen'd object,
 * the ones after it: libc's even in a jemalloc-linked program); the kind
 * is never NEXT_GLIBC (no pool: after a disarm the program's own free
 * must take every sampled block) and a program's own malloc is not
 * "ahead of the shim" but the allocator to sample.
 */
extern int next_injected SHIM_HIDDEN;

/* NEXT_* (acquire). */
int next_kind(void) SHIM_HIDDEN;

/* The allocator's object (a path, "" until resolved). */
const char *next_object(void) SHIM_HIDDEN;

/* Why the kind is NEXT_PASS, one line; "" otherwise. */
const char *next_why(void) SHIM_HIDDEN;

/* The bootstrap arena: its range, in .bss. */
extern char next_arena[] SHIM_HIDDEN;
#define NEXT_ARENA_BYTES (256u << 10)

/* 1 if p is an arena block. */
static inline int next_boot_owns(const void *p)
{
	return (size_t)((const char *)p - next_arena) < NEXT_ARENA_BYTES;
}

/* The usable size of arena block p. */
size_t next_boot_usable(const void *p) SHIM_HIDDEN;

/* A zeroed arena block of n bytes aligned to align (<= 4096); NULL when the arena is spent. */
void *next_boot_alloc(size_t n, size_t align) SHIM_HIDDEN;

#endif
