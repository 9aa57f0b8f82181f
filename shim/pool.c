/*
 * pool.c — a size-class allocator for sampled blocks, in a region of its
 * own so that sampled allocations never disturb glibc's bins and so that
 * free() recognises them by address. Cost per sampled allocation or free:
 * a lock and a free-list push or pop (tens of nanoseconds), and a page
 * fault when a class first reaches a page. Memory: a sampled block takes its
 * size rounded up to a power of two (at the default rate 1 block per
 * 512 KiB allocated, so the waste is a fraction of a percent; at rate 1,
 * every small allocation, up to 2x).
 */
#include "shim/pool.h"

#include <sys/mman.h>

#include "shim/lock.h"

#define POOL_MIN_SHIFT 4
#define POOL_CLASSES 13                /* 16 B .. 64 KiB */
#define POOL_CLASS_SHIFT 22            /* 4 MiB of address space a class */
/*
 * Class k has 2^(22-4-k) blocks, so 16-byte records take 4 MiB >> k: they
 * are packed after the blocks, class k's at 8 MiB - (8 MiB >> k).
 */
#define POOL_META_OFF(k) (((uintptr_t)2 << POOL_CLASS_SHIFT) - (((uintptr_t)2 << POOL_CLASS_SHIFT) >> (k)))
#define POOL_META_BYTES ((size_t)2 << POOL_CLASS_SHIFT)

uintptr_t pool_base;
uintptr_t pool_span;
uint32_t pool_epoch = 1;

struct pool_class {
	void *free;     /* freed blocks, linked through their first word */
	uintptr_t bump; /* offset of the next never-used block */
};

static struct pool_class pool_class[POOL_CLASSES];
static int pool_mutex;

int pool_init(void)
{
	size_t span = (size_t)POOL_CLASSES << POOL_CLASS_SHIFT; /* blocks; records after them */
	unsigned k;
	void *m;

	/*
	 * Writable at once: no mprotect (which takes the address-space lock
	 * for writing, against every page fault of every thread) as classes
	 * grow. MAP_NORESERVE: no commit charge for untouched pages; under
	 * strict overcommit the mapping fails and the shim does without.
	 */
	m = mmap(NULL, span + POOL_META_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	for (k = 0; k < POOL_CLASSES; k++)
		pool_class[k] = (struct pool_class){ NULL, 0 };
	pool_mutex = 0;
	pool_base = (uintptr_t)m;
	__atomic_store_n(&pool_span, span, __ATOMIC_RELEASE);
	return 0;
}

void pool_fini(void)
{
	if (pool_span == 0)
		return;
	munmap((void *)pool_base, pool_span + POOL_META_BYTES);
	pool_span = 0;
	pool_base = 0;
}

_Static_assert(sizeof(struct pool_meta) == 16, "records are 16 bytes");

static unsigned pool_class_of(size_t size)
{
	unsigned k = 0;

	while (((size_t)1 << (k + POOL_MIN_SHIFT)) < size)
		k++;
	return k;
}

void *pool_alloc(size_t size, size_t align)
{
	struct pool_class *c;
	uintptr_t start, bsize;
	void *p = NULL;
	unsigned k;

	if (pool_span == 0 || size > POOL_MAX_BLOCK || align > POOL_MAX_BLOCK)
		return NULL;
	k = pool_class_of(size > align ? size : align); /* blocks are aligned to their size */
	c = &pool_class[k];
	bsize = (uintptr_t)1 << (k + POOL_MIN_SHIFT);
	start = pool_base + ((uintptr_t)k << POOL_CLASS_SHIFT);
	lock_take(&pool_mutex);
	if (c->free != NULL) {
		p = c->free;
		c->free = *(void **)p;
		goto out;
	}
	if (c->bump + bsize > ((uintptr_t)1 << POOL_CLASS_SHIFT))
		goto out; /* class full: the caller uses glibc */
	p = (void *)(start + c->bump);
	c->bump += bsize;
out:
	lock_give(&pool_mutex);
	return p;
}

void pool_free(void *p)
{
	struct pool_class *c = &pool_class[((uintptr_t)p - pool_base) >> POOL_CLASS_SHIFT];

	lock_take(&pool_mutex);
	*(void **)p = c->free;
	c->free = p;
	lock_give(&pool_mutex);
}

size_t pool_usable(const void *p)
{
	return (size_t)1 << ((((uintptr_t)p - pool_base) >> POOL_CLASS_SHIFT) + POOL_MIN_SHIFT);
}

struct pool_meta *pool_meta(const void *p)
{
	uintptr_t off = (uintptr_t)p - pool_base, k = off >> POOL_CLASS_SHIFT;
	uintptr_t i = (off & (((uintptr_t)1 << POOL_CLASS_SHIFT) - 1)) >> (k + POOL_MIN_SHIFT);

	return (struct pool_meta *)(pool_base + pool_span + POOL_META_OFF(k)) + i;
}

void pool_new_epoch(void)
{
	pool_epoch++;
}

void pool_lock(void)
{
	lock_take(&pool_mutex);
}

void pool_unlock(void)
{
	lock_give(&pool_mutex);
}

void pool_reset_lock(void)
{
	pool_mutex = 0;
}
