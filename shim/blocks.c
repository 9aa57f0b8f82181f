/*
 * blocks.c — an open-addressing hash table (linear probing, backward-shift
 * deletion, no tombstones) from a sampled block's address to its size and
 * bucket, in private mmap'd memory so that it can be used inside malloc
 * and free. It is consulted only for page-aligned frees (about 1 in 256
 * small frees, plus the sampled ones), and then costs a lock and one or
 * two cache lines; when no sampled block is live it costs one relaxed
 * load and no lock. Memory: 24 bytes a slot, touched only where entries
 * land (the default 2^20 slots reserve 24 MB of address space).
 */
#include "shim/blocks.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

#include "shim/lock.h"

struct blocks_entry {
	uint64_t key;    /* the block's address; 0: empty */
	uint64_t size;   /* bytes requested */
	int32_t bucket;  /* its bucket in the segment */
	uint32_t unused;
};

static struct blocks_entry *blocks_slot; /* NULL: off */
static uint64_t blocks_mask;
static unsigned blocks_shift;            /* 64 - log2(slots) */
static uint64_t blocks_count;            /* entries present; written under the lock */
static unsigned blocks_log2;
static int blocks_mutex;

int blocks_init(unsigned log2_slots)
{
	size_t bytes;
	void *m;

	if (log2_slots < 10 || log2_slots > 26) {
		errno = EINVAL;
		return -1;
	}
	bytes = ((size_t)1 << log2_slots) * sizeof(struct blocks_entry);
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (m == MAP_FAILED)
		return -1;
	blocks_mask = ((uint64_t)1 << log2_slots) - 1;
	blocks_shift = 64 - log2_slots;
	blocks_log2 = log2_slots;
	blocks_count = 0;
	blocks_mutex = 0;
	__atomic_store_n(&blocks_slot, (struct blocks_entry *)m, __ATOMIC_RELEASE);
	return 0;
}

void blocks_fini(void)
{
	struct blocks_entry *s = blocks_slot;

	if (s == NULL)
		return;
	blocks_slot = NULL;
	blocks_count = 0;
	munmap(s, (blocks_mask + 1) * sizeof(*s));
}

int blocks_restart(void)
{
	blocks_mutex = 0;
	if (blocks_slot == NULL)
		return -1;
	blocks_fini();
	return blocks_init(blocks_log2);
}

/* The home slot of an address: Fibonacci hashing of the page number. */
static uint64_t blocks_home(uint64_t p)
{
	return ((p >> 12) * 0x9E3779B97F4A7C15ull) >> blocks_shift;
}

/* The slot holding p, or the empty slot ending its probe run (~0 when off). */
static uint64_t blocks_find(uint64_t p)
{
	uint64_t i = blocks_home(p);

	while (blocks_slot[i].key != 0 && blocks_slot[i].key != p)
		i = (i + 1) & blocks_mask;
	return i;
}

int blocks_insert(uintptr_t p, uint64_t size, int32_t bucket)
{
	uint64_t i;
	int rc = -1;

	if (blocks_slot == NULL || p == 0)
		return -1;
	lock_take(&blocks_mutex);
	if (blocks_slot == NULL)
		goto out;
	i = blocks_find(p);
	if (blocks_slot[i].key == 0) {
		if (blocks_count >= (blocks_mask + 1) / 2)
			goto out; /* full: keeps every probe run short and finite */
		__atomic_store_n(&blocks_count, blocks_count + 1, __ATOMIC_RELAXED);
	}
	blocks_slot[i] = (struct blocks_entry){ p, size, bucket, 0 };
	rc = 0;
out:
	lock_give(&blocks_mutex);
	return rc;
}

/*
 * Removes the entry at slot i, shifting later entries of the run back so
 * that every remaining key stays reachable from its home slot.
 */
static void blocks_delete_at(uint64_t i)
{
	uint64_t j = i, home;

	for (;;) {
		j = (j + 1) & blocks_mask;
		if (blocks_slot[j].key == 0)
			break;
		home = blocks_home(blocks_slot[j].key);
		/* Move j back into the hole i unless its home lies in (i, j]. */
		if (((j - home) & blocks_mask) >= ((j - i) & blocks_mask)) {
			blocks_slot[i] = blocks_slot[j];
			i = j;
		}
	}
	blocks_slot[i].key = 0;
	__atomic_store_n(&blocks_count, blocks_count - 1, __ATOMIC_RELAXED);
}

int blocks_remove(uintptr_t p, uint64_t *size, int32_t *bucket)
{
	uint64_t i;
	int found = 0;

	/* p present implies its insert happened before this call: no lock needed to see 0. */
	if (p == 0 || __atomic_load_n(&blocks_count, __ATOMIC_RELAXED) == 0)
		return 0;
	lock_take(&blocks_mutex);
	if (blocks_slot == NULL)
		goto out;
	i = blocks_find(p);
	if (blocks_slot[i].key == p) {
		*size = blocks_slot[i].size;
		*bucket = blocks_slot[i].bucket;
		blocks_delete_at(i);
		found = 1;
	}
out:
	lock_give(&blocks_mutex);
	return found;
}

int blocks_contains(uintptr_t p)
{
	int found = 0;

	if (p == 0 || __atomic_load_n(&blocks_count, __ATOMIC_RELAXED) == 0)
		return 0;
	lock_take(&blocks_mutex);
	if (blocks_slot != NULL)
		found = blocks_slot[blocks_find(p)].key == p;
	lock_give(&blocks_mutex);
	return found;
}

uint64_t blocks_live(void)
{
	return __atomic_load_n(&blocks_count, __ATOMIC_RELAXED);
}

void blocks_lock(void)
{
	lock_take(&blocks_mutex);
}

void blocks_unlock(void)
{
	lock_give(&blocks_mutex);
}
