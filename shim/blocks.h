#ifndef CPROF_SHIM_BLOCKS_H
#define CPROF_SHIM_BLOCKS_H
/*
 * blocks — the table of live sampled blocks that glibc allocated (those
 * over 64 KiB, or all when there is no pool): address -> (size, bucket),
 * so that free() can credit a sampled block's bucket. Such blocks are
 * allocated 4096-aligned, so free() asks this table only about
 * page-aligned pointers.
 *
 * Invariants:
 *  - the table lives in private anonymous memory (never the heap), at
 *    most half full: it doubles when it would fill past that, up to a
 *    hard cap of slots, and an insert past the cap fails (the caller
 *    counts the sample as dropped);
 *  - every change runs under one leaf lock (shim/lock.h): no call outside
 *    this file while it is held. blocks_remove() and blocks_contains()
 *    first read a counting filter without the lock and return 0 at once
 *    when it rules p out (exact for absence, see blocks.c);
 *  - an address is present from the insert after its allocation until the
 *    remove before its free, so a thread freeing p never races with
 *    another insert or remove of p itself;
 *  - no dependency on other shim files (unit-testable alone).
 */
#include <stdint.h>

/*
 * The counting filter: entries whose page number hashes to each counter.
 * Read without the lock; exact for absence (see blocks.c).
 */
#define BLOCKS_FILTER_LOG2 10
extern uint32_t blocks_filter[1u << BLOCKS_FILTER_LOG2];

static inline uint32_t *blocks_counter(uintptr_t p)
{
	return &blocks_filter[((p >> 12) * 0xD6E8FEB86659FD93ull) >> (64 - BLOCKS_FILTER_LOG2)];
}

/*
 * 0 when p is certainly not in the table, 1 when it may be: one load, no
 * lock, so that freeing an unsampled page-aligned block (a hot one, reused
 * in a loop, is page-aligned in some heap layouts) stays cheap.
 */
static inline int blocks_may_hold(uintptr_t p)
{
	return p != 0 && __atomic_load_n(blocks_counter(p), __ATOMIC_RELAXED) != 0;
}

/*
 * Maps a table of 2^min_log2 slots (24 bytes each) that may grow to
 * 2^max_log2 (4 <= min_log2 <= max_log2 <= 26). 0 or -1.
 */
int blocks_init(unsigned min_log2, unsigned max_log2);

/* Unmaps the table; it is off afterwards (all lookups miss). */
void blocks_fini(void);

/* In a fork child: the lock free again (the table, a private copy, stays: the blocks are the child's too). */
void blocks_reset_lock(void);

/*
 * Records p (page-aligned, non-NULL) as a sampled block of size bytes in
 * bucket; an existing entry for p is replaced. 0, or -1 when full or off.
 */
int blocks_insert(uintptr_t p, uint64_t size, int32_t bucket);

/* Removes p: 1 with *size and *bucket filled if it was present, else 0. */
int blocks_remove(uintptr_t p, uint64_t *size, int32_t *bucket);

/* 1 if p is present, else 0. */
int blocks_contains(uintptr_t p);

/* Entries present now (a relaxed read; exact when no thread races). */
uint64_t blocks_live(void);

/* Takes / releases the lock (around fork). */
void blocks_lock(void);
void blocks_unlock(void);

/*
 * Forgets every entry (under the lock): a re-armed injected shim's new
 * window, in which blocks entered before and freed while dormant must not
 * count as live, nor their addresses, reused, as sampled.
 */
void blocks_clear(void);

#endif
