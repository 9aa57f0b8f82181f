/*
 * blocks.c — an open-addressing hash table (linear probing, backward-shift
 * deletion, no tombstones) from a sampled block's address to its size and
 * bucket, in private mmap'd memory so that it can be used inside malloc
 * and free. It is consulted only for page-aligned frees (about 1 in 256
 * small frees, plus the sampled ones). In front of it sits a 4 KiB
 * counting filter (entries per hash of the page number) read without a
 * lock: a page-aligned free of an unsampled block usually finds a zero
 * there and costs one load, instead of a lock round trip between threads
 * and a likely cache miss in the table. The table starts small, fully
 * faulted in, and doubles (rehash under the lock) as sampled blocks
 * accumulate. Memory: 24 bytes a slot, at most twice the live entries.
 */
#include "shim/blocks.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
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
static unsigned blocks_min_log2, blocks_max_log2;
static int blocks_mutex;

/*
 * The counting filter (blocks.h): a present p has added 1 to its counter
 * before its free can run (the insert happens before malloc returns p),
 * and every decrement undoes an earlier increment, so a free that reads 0
 * knows p is absent without taking the lock. 4 KiB, written once at init
 * so that no later write faults (see blocks_map).
 */
uint32_t blocks_filter[1u << BLOCKS_FILTER_LOG2];

/*
 * 2^log2 empty slots, populated: a slot first read (mapping the shared
 * zero page) and later written costs a copy-on-write fault whose TLB
 * flush interrupts every other CPU running the process, a visible cost to
 * an allocation-heavy threaded program when the table was left lazy.
 */
static struct blocks_entry *blocks_map(unsigned log2)
{
	void *m = mmap(NULL, ((size_t)1 << log2) * sizeof(struct blocks_entry),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static void blocks_use(struct blocks_entry *s, unsigned log2)
{
	blocks_mask = ((uint64_t)1 << log2) - 1;
	blocks_shift = 64 - log2;
	__atomic_store_n(&blocks_slot, s, __ATOMIC_RELEASE);
}

int blocks_init(unsigned min_log2, unsigned max_log2)
{
	struct blocks_entry *s;

	if (min_log2 < 4 || min_log2 > max_log2 || max_log2 > 26) {
		errno = EINVAL;
		return -1;
	}
	s = blocks_map(min_log2);
	if (s == NULL)
		return -1;
	memset(blocks_filter, 0, sizeof(blocks_filter)); /* also faults it in, writable */
	blocks_min_log2 = min_log2;
	blocks_max_log2 = max_log2;
	blocks_count = 0;
	blocks_mutex = 0;
	blocks_use(s, min_log2);
	return 0;
}

void blocks_fini(void)
{
	struct blocks_entry *s = blocks_slot;

	if (s == NULL)
		return;
	blocks_slot = NULL;
	blocks_count = 0;
	memset(blocks_filter, 0, sizeof(blocks_filter));
	munmap(s, (blocks_mask + 1) * sizeof(*s));
}

void blocks_clear(void)
{
	lock_take(&blocks_mutex);
	if (blocks_slot != NULL) {
		memset(blocks_slot, 0, (blocks_mask + 1) * sizeof(*blocks_slot));
		__atomic_store_n(&blocks_count, 0, __ATOMIC_RELAXED);
		memset(blocks_filter, 0, sizeof(blocks_filter));
	}
	lock_give(&blocks_mutex);
}

void blocks_reset_lock(void)
{
	blocks_mutex = 0;
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

/*
 * Doubles the table (under the lock), up to 2^max_log2 slots. A syscall
 * with the lock held, but mmap and munmap call nothing of the process's,
 * so the lock stays a leaf; it happens log2(max/min) times at most.
 */
static int blocks_grow(void)
{
	struct blocks_entry *old = blocks_slot, *s;
	uint64_t n = blocks_mask + 1, k, i;
	unsigned log2 = 64 - blocks_shift + 1;

	if (log2 > blocks_max_log2 || (s = blocks_map(log2)) == NULL)
		return -1;
	blocks_use(s, log2);
	for (k = 0; k < n; k++) {
		if (old[k].key == 0)
			continue;
		i = blocks_find(old[k].key);
		s[i] = old[k];
	}
	munmap(old, n * sizeof(*old));
	return 0;
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
		if (blocks_count + 1 > (blocks_mask + 1) / 2) {
			/* At most half full: keeps every probe run short and finite. */
			if (blocks_grow() != 0)
				goto out;
			i = blocks_find(p);
		}
		__atomic_store_n(&blocks_count, blocks_count + 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(blocks_counter(p), 1, __ATOMIC_RELAXED);
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

	if (!blocks_may_hold(p))
		return 0;
	lock_take(&blocks_mutex);
	if (blocks_slot == NULL)
		goto out;
	i = blocks_find(p);
	if (blocks_slot[i].key == p) {
		*size = blocks_slot[i].size;
		*bucket = blocks_slot[i].bucket;
		blocks_delete_at(i);
		__atomic_fetch_sub(blocks_counter(p), 1, __ATOMIC_RELAXED);
		found = 1;
	}
out:
	lock_give(&blocks_mutex);
	return found;
}

int blocks_contains(uintptr_t p)
{
	int found = 0;

	if (!blocks_may_hold(p))
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
