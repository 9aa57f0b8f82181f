#ifndef CPROF_SHIM_POOL_H
#define CPROF_SHIM_POOL_H
/*
 * pool — where sampled blocks of up to 64 KiB live: a private region of
 * power-of-two size classes outside glibc's heap. Giving glibc a
 * page-aligned memalign for every sample made it split and consolidate
 * large chunks (~90 extra cache misses in _int_malloc per sample); the
 * pool costs a pop from a free list, and "is p a sampled block?" becomes
 * a range check.
 *
 * Invariants:
 *  - the region (60 MiB of address space: 52 MiB of blocks, then their
 *    records) is mapped once, when the shim activates, writable and
 *    MAP_NORESERVE (no memory until touched); the caller does not map it
 *    under an address-space limit or strict overcommit. Memory is reused
 *    within its class, never returned to glibc or the kernel; a full class
 *    sends its samples to glibc's memalign (counted in no_pool);
 *  - class k (16 << k bytes) owns its own 4 MiB span, so a block's class
 *    follows from its address and every block is aligned to its size;
 *  - every pointer inside the region is a pool block: free() must give it
 *    back here (also in a fork child, which inherits the parent's blocks);
 *  - each block has a metadata record (its sample's bucket and size) in a
 *    parallel region, found from its address: freeing a sampled pool
 *    block needs no table and no lock. A fork child keeps the records (its
 *    segment keeps the bucket numbers); a record counts only if its epoch
 *    is the current one (pool_new_epoch forgets them all);
 *  - one leaf lock (shim/lock.h) for allocation and free;
 *  - no dependency on other shim files.
 */
#include <stddef.h>
#include <stdint.h>

#define POOL_MAX_BLOCK ((size_t)1 << 16) /* larger sampled blocks go to glibc */

extern uintptr_t pool_base __attribute__((visibility("hidden")));  /* 0: no pool */
extern uintptr_t pool_span __attribute__((visibility("hidden")));  /* bytes reserved */

/* Reserves the region. 0, or -1 (no pool: every caller falls back to glibc). */
int pool_init(void);

/* Releases the region (tests). */
void pool_fini(void);

/* 1 if p lies in the pool region: one load, a subtraction, a compare. */
static inline int pool_owns(const void *p)
{
	return (uintptr_t)p - pool_base < pool_span;
}

/*
 * A block of at least size bytes aligned to align (a power of two), both
 * at most POOL_MAX_BLOCK; NULL if they are larger or the class is full.
 */
void *pool_alloc(size_t size, size_t align);

/* Gives p (pool_owns(p)) back to its class. */
void pool_free(void *p);

/* The usable size of p (pool_owns(p)): its class size. */
size_t pool_usable(const void *p);

/* The metadata of a pool block; the caller owns it as long as it owns the block. */
struct pool_meta {
	int32_t bucket; /* its sample's bucket, or -1 */
	uint32_t epoch; /* pool_epoch when it was written */
	uint64_t size;  /* bytes requested */
};

extern uint32_t pool_epoch __attribute__((visibility("hidden")));

/* The record of pool block p (pool_owns(p), allocated). */
struct pool_meta *pool_meta(const void *p);

/* Takes / releases the lock (around fork); pool_reset_lock in the child. */
void pool_lock(void);
void pool_unlock(void);
void pool_reset_lock(void);

/* In a fork child: a new epoch, so the parent's records no longer count. */
void pool_new_epoch(void);

#endif
