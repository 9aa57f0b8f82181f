/*
 * malloc.c — the interposed allocation functions. Each one is a short fast
 * path (a compare-and-subtract on this thread's sampling counter in
 * initial-exec TLS, then a tail call into the real allocator's function
 * through shim_next, shim/next.h: 7 instructions for malloc) and an
 * out-of-line slow path taken about once per CPROF_SAMPLE_RATE bytes. On
 * glibc, a sampled block of up to 64 KiB comes from the shim's pool
 * (shim/pool.h) and carries its own record; a larger one comes from
 * glibc's memalign, 4096-aligned, and is entered in the block table. On
 * any other allocator every sampled block comes from its own memalign,
 * 4096-aligned, into the block table. So free() asks one question of
 * every pointer, "in the pool, or page-aligned?" (a range check and a bit
 * test: 6 instructions and a tail call), and looks further only for those
 * (~1 in 256 small glibc blocks are page-aligned; glibc's mmap'd chunks,
 * at page + 16, never are; the bootstrap arena's blocks are). A sampled allocation costs a stack walk (~15 instructions a
 * cached frame), a bucket lookup and a record: ~1 us with its cache misses.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "shim/blocks.h"
#include "shim/inject.h"
#include "shim/labels.h"
#include "shim/next.h"
#include "shim/pool.h"
#include "shim/segment.h"
#include "shim/shim.h"
#include "shim/stack.h"
#include "shim/table.h"

#define SHIM_COLD __attribute__((noinline, cold))
#define SHIM_MAX_ALIGN ((size_t)1 << 30) /* larger alignments are never sampled */

/* glibc marks a chunk obtained from mmap (always fresh, zero-filled) with this bit. */
#define SHIM_CHUNK_MMAPPED 2u

#define SHIM_MIN_ALIGN 16 /* what malloc promises on x86-64 */

/* Non-NULL and 4096-aligned: large sampled blocks (from glibc) are. */
static inline int shim_page_aligned(const void *p)
{
	return ((uintptr_t)p & (SHIM_PAGE - 1)) == 0 && p != NULL;
}

/* May p be a sampled block? In the pool, or page-aligned: the only test free() makes. */
static inline int shim_candidate(const void *p)
{
	return pool_owns(p) || ((uintptr_t)p & (SHIM_PAGE - 1)) == 0;
}

/* The usable size of any block the shim hands out. */
static size_t shim_usable(void *p)
{
	if (pool_owns(p))
		return pool_usable(p);
	if (next_boot_owns(p))
		return next_boot_usable(p);
	return p == NULL ? 0 : shim_next.usable(p);
}

/* Gives this thread its PRNG seed: its TLS address, the TSC, a counter. */
static void shim_seed(struct shim_thread *t)
{
	static uint64_t threads;
	uint64_t n = __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);

	sample_seed(&t->rng, (uint64_t)(uintptr_t)t ^ __rdtsc() ^ (n * 0xD1B54A32D192ED03ull));
	t->left = sample_interval(&t->rng, shim_rate);
	t->seeded = 1;
}

/*
 * Called when sample_take() said "sample": decides whether the allocation
 * of size bytes is really sampled (1) or not (0, counter updated). Not
 * sampled while the shim is busy (left stays due: the next allocation
 * takes the sample), before init, when off, or on a thread's first call
 * (which only draws its first interval and tests it).
 */
static int shim_due(struct shim_thread *t, uint64_t size)
{
	int st;

	if (t->busy)
		return 0;
	st = __atomic_load_n(&shim_state, __ATOMIC_ACQUIRE);
	if (st != SHIM_READY || shim_rate == 0) {
		if (st == SHIM_OFF || st == SHIM_READY)
			t->left = UINT64_MAX; /* never again on this thread */
		return 0;
	}
	if (!t->seeded) {
		shim_seed(t);
		if (!sample_take(&t->left, size))
			return 0;
	}
	t->left = sample_interval(&t->rng, shim_rate);
	/* Dormant injected shim, reached through a pointer taken while armed: pass through. */
	if (__builtin_expect(shim_late, 0) && !__atomic_load_n(&inject_armed, __ATOMIC_ACQUIRE))
		return 0;
	inject_check(); /* an injected shim whose reader went quiet disarms itself */
	return shim_activate();
}

/*
 * Enters the sampled block p of size bytes in its bucket, and where its
 * free will find it: the pool block's own record, or the block table.
 * Inlined into its one caller: every shim frame costs the unwinder a step
 * only to be skipped.
 */
static inline __attribute__((always_inline)) void shim_record(void *p, uint64_t size)
{
	uint64_t frames[SEG_MAX_FRAMES];
	uint32_t flags, n;
	int32_t b;

	n = stack_capture(frames, SEG_MAX_FRAMES, &flags);
	b = table_bucket_labeled(SEG_KIND_ALLOC, flags, labels_current(), frames, n);
	if (pool_owns(p)) {
		*pool_meta(p) = (struct pool_meta){ b, pool_epoch, size };
	} else if (b >= 0 && blocks_insert((uintptr_t)p, size, b) != 0) {
		table_count_dropped(); /* untracked: its free would go uncounted */
		return;
	}
	if (b >= 0) /* else the table is full or off: counted there */
		table_add(b, 0, size, sample_weight(size, shim_rate));
}

/*
 * A sampled block from an allocator other than glibc: its own memalign,
 * 4096-aligned so that free() can tell. A large calloc first asks its
 * calloc, which may hand out fresh zero pages without touching them, and
 * keeps the block if it happens to be page-aligned (large blocks usually
 * are).
 */
static void *shim_alloc_foreign(size_t size, size_t align, int zero)
{
	void *p;

	if (zero && size >= ((size_t)1 << 20) && align <= SHIM_PAGE) {
		p = shim_next.calloc(1, size);
		if (p == NULL || shim_page_aligned(p))
			return p;
		shim_next.free(p);
	}
	p = shim_next.memalign(align < SHIM_PAGE ? SHIM_PAGE : align, size);
	if (p != NULL && zero)
		memset(p, 0, size);
	return p;
}

/*
 * A sampled allocation of size bytes aligned to align (a power of two),
 * zeroed if zero. With glibc, up to 64 KiB it comes from the pool; larger
 * (or with no pool) from glibc's memalign, 4096-aligned so that free() can
 * tell, and zeroed only if glibc did not mmap it (fresh, zero already: a
 * sampled 1 GiB calloc must not touch 1 GiB). With another allocator,
 * always from that allocator (shim_alloc_foreign), so that its own
 * extensions (sallocx, mi_free, tc_free...) accept every block.
 */
static SHIM_COLD void *shim_alloc_sampled(size_t size, size_t align, int zero)
{
	void *p = NULL;

	shim_tls.busy++;
	if (next_kind() != NEXT_GLIBC) {
		p = shim_alloc_foreign(size, align, zero);
	} else if ((p = pool_alloc(size, align)) != NULL) {
		if (zero)
			memset(p, 0, size);
	} else {
		if (size <= POOL_MAX_BLOCK && align <= POOL_MAX_BLOCK)
			table_count_no_pool(); /* the pool is absent or its class full */
		p = shim_next.memalign(align < SHIM_PAGE ? SHIM_PAGE : align, size);
		if (p != NULL && zero && !(((const size_t *)p)[-1] & SHIM_CHUNK_MMAPPED))
			memset(p, 0, size);
	}
	if (p != NULL) {
		shim_record(p, size);
	} else {
		/*
		 * The sampled form (page-aligned) did not fit, under a tight limit
		 * say: the plain request may still. Never the reason it fails.
		 */
		table_count_dropped();
		if (zero)
			p = shim_next.calloc(1, size);
		else if (align <= SHIM_MIN_ALIGN)
			p = shim_next.malloc(size);
		else
			p = shim_next.memalign(align, size);
	}
	shim_tls.busy--;
	return p;
}

static SHIM_COLD void *shim_malloc_slow(size_t n)
{
	if (!shim_due(&shim_tls, n))
		return shim_next.malloc(n);
	return shim_alloc_sampled(n, SHIM_MIN_ALIGN, 0);
}

static inline void *shim_malloc(size_t n)
{
	if (!sample_take(&shim_tls.left, n))
		return shim_next.malloc(n);
	return shim_malloc_slow(n);
}

/*
 * Frees a pool block, crediting its bucket if its record still counts (not
 * a parent's after fork, say). A pool block's record is its own: no
 * table, no lock.
 */
static SHIM_COLD void shim_free_pool(void *p)
{
	struct shim_thread *t = &shim_tls;
	struct pool_meta *m = pool_meta(p);

	if (m->bucket >= 0 && m->epoch == pool_epoch && !t->busy) {
		t->busy++;
		table_add(m->bucket, 1, m->size, sample_weight(m->size, shim_rate));
		t->busy--;
	}
	m->bucket = -1;
	pool_free(p);
}

/* Frees a page-aligned glibc block the filter could not rule out. */
static SHIM_COLD void shim_free_table(void *p)
{
	struct shim_thread *t = &shim_tls;
	uint64_t size;
	int32_t b;

	if (!t->busy) {
		t->busy++;
		if (blocks_remove((uintptr_t)p, &size, &b))
			table_add(b, 1, size, sample_weight(size, shim_rate));
		t->busy--;
	}
	shim_next.free(p);
}

/*
 * A free that may be of a sampled block. Only tail calls, so no stack
 * frame: a page-aligned block that is not ours costs a filter load more.
 * A bootstrap arena block is never freed.
 */
static SHIM_COLD void shim_free_slow(void *p)
{
	if (pool_owns(p))
		shim_free_pool(p);
	else if (blocks_may_hold((uintptr_t)p))
		shim_free_table(p);
	else if (!next_boot_owns(p))
		shim_next.free(p); /* NULL, or page-aligned but not ours */
}

static inline void shim_free(void *p)
{
	if (__builtin_expect(shim_candidate(p), 0)) {
		shim_free_slow(p);
		return;
	}
	shim_next.free(p);
}

/* Copies what the block p holds, up to n bytes, into q (p is not freed). */
static void shim_copy(void *q, void *p, size_t n)
{
	size_t old = shim_usable(p);

	memcpy(q, p, old < n ? old : n);
}

static SHIM_COLD void *shim_realloc_slow(void *p, size_t n)
{
	struct shim_thread *t = &shim_tls;
	void *q;

	if (p == NULL)
		return shim_malloc(n);
	if (pool_owns(p) || next_boot_owns(p) || (shim_page_aligned(p) && !t->busy && blocks_contains((uintptr_t)p))) {
		/* A sampled (or pool) block never goes to the real realloc: its free must be counted. */
		if (n == 0) {
			shim_free(p); /* what glibc's realloc(p, 0) does */
			return NULL;
		}
		q = shim_malloc(n);
		if (q == NULL)
			return NULL; /* p stays valid, as realloc promises */
		shim_copy(q, p, n);
		shim_free(p);
		return q;
	}
	if (n == 0 || !sample_take(&t->left, n) || !shim_due(t, n))
		return shim_next.realloc(p, n);
	/* An unsampled block whose new size is due: the new block is sampled. */
	q = shim_alloc_sampled(n, SHIM_MIN_ALIGN, 0);
	if (q == NULL)
		return NULL;
	shim_copy(q, p, n);
	shim_next.free(p);
	return q;
}

static inline void *shim_realloc(void *p, size_t n)
{
	struct shim_thread *t = &shim_tls;

	if (__builtin_expect(!shim_candidate(p) && n < t->left, 1)) {
		t->left -= n;
		return shim_next.realloc(p, n);
	}
	return shim_realloc_slow(p, n);
}

static SHIM_COLD void *shim_calloc_slow(size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total) || !shim_due(&shim_tls, total))
		return shim_next.calloc(n, size); /* on overflow: NULL and ENOMEM */
	return shim_alloc_sampled(total, SHIM_MIN_ALIGN, 1);
}

static SHIM_COLD void *shim_memalign_slow(size_t align, size_t n)
{
	size_t a = SHIM_MIN_ALIGN;

	if (align > SHIM_MAX_ALIGN || !shim_due(&shim_tls, n))
		return shim_next.memalign(align, n);
	while (a < align) /* glibc rounds a non-power of two up, too */
		a *= 2;
	return shim_alloc_sampled(n, a, 0);
}

static inline void *shim_memalign(size_t align, size_t n)
{
	if (!sample_take(&shim_tls.left, n))
		return shim_next.memalign(align, n);
	return shim_memalign_slow(align, n);
}

SHIM_EXPORT void *malloc(size_t n)
{
	return shim_malloc(n);
}

/* Our own malloc, whoever the dynamic linker binds "malloc" to. */
extern __typeof(malloc) shim_own_malloc __attribute__((alias("malloc"), copy(malloc))) SHIM_HIDDEN;

SHIM_EXPORT void free(void *p)
{
	shim_free(p);
}

SHIM_EXPORT void *calloc(size_t n, size_t size)
{
	struct shim_thread *t = &shim_tls;
	size_t total;

	if (__builtin_expect(!__builtin_mul_overflow(n, size, &total) && total < t->left, 1)) {
		t->left -= total;
		return shim_next.calloc(n, size);
	}
	return shim_calloc_slow(n, size);
}

SHIM_EXPORT void *realloc(void *p, size_t n)
{
	return shim_realloc(p, n);
}

SHIM_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return shim_realloc(p, total);
}

SHIM_EXPORT void *memalign(size_t align, size_t n)
{
	return shim_memalign(align, n);
}

/* Unsampled: the allocator's own aligned_alloc, with its own checks. */
SHIM_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (!sample_take(&shim_tls.left, n))
		return shim_next.aligned_alloc(align, n);
	return shim_memalign_slow(align, n);
}

/* Unsampled: the allocator's own; sampled: glibc's checks, then memalign. */
SHIM_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (!sample_take(&shim_tls.left, n))
		return shim_next.posix_memalign(out, align, n);
	if (align == 0 || align % sizeof(void *) != 0 ||
	    ((align / sizeof(void *)) & (align / sizeof(void *) - 1)) != 0)
		return EINVAL;
	p = shim_memalign_slow(align, n);
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

SHIM_EXPORT void *valloc(size_t n)
{
	if (!sample_take(&shim_tls.left, n))
		return shim_next.valloc(n);
	return shim_memalign_slow(SHIM_PAGE, n);
}

SHIM_EXPORT void *pvalloc(size_t n)
{
	size_t rounded;

	if (__builtin_add_overflow(n, SHIM_PAGE - 1, &rounded))
		return shim_next.pvalloc(n); /* NULL and ENOMEM */
	rounded &= ~(size_t)(SHIM_PAGE - 1);
	if (!sample_take(&shim_tls.left, rounded))
		return shim_next.pvalloc(n);
	return shim_memalign_slow(SHIM_PAGE, rounded == 0 ? SHIM_PAGE : rounded);
}

/* A pool or arena block's size; the allocator's answer for everything else. */
SHIM_EXPORT size_t malloc_usable_size(void *p)
{
	return shim_usable(p);
}

/* C23 (glibc 2.39+); harmless to define on older glibc, which does not call them. */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

SHIM_EXPORT void free_sized(void *p, size_t size)
{
	(void)size;
	shim_free(p);
}

SHIM_EXPORT void free_aligned_sized(void *p, size_t align, size_t size)
{
	(void)align;
	(void)size;
	shim_free(p);
}
