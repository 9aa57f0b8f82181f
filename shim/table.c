/*
 * table.c — the producer side of the segment contract (shim/segment.h):
 * creating the memfd segment, appending buckets, and updating a bucket's
 * counters under its sequence lock. A lookup of an existing bucket is a
 * hash of the stack (~1 ns a frame) and a lock-free probe of a private
 * index whose slot holds 32 bits of the hash next to the bucket number,
 * so a probe touches the segment only on a likely match; a new bucket
 * costs the append lock and one 616-byte write. Memory: the segment is
 * ~616 bytes a bucket (20 MB for the default 32768, touched only as
 * buckets are used), the index 16 bytes a bucket.
 */
#include "shim/table.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "shim/lock.h"

static struct seg_header *table_seg;    /* NULL: the table is off */
static size_t table_seg_bytes;
static struct seg_bucket *table_buckets;
static uint32_t table_cap;
static uint64_t *table_index;           /* slot: hash tag << 32 | bucket + 1; 0 empty */
static size_t table_index_bytes;
static uint32_t table_mask;
static uint64_t table_rate;
static int table_mutex;

static size_t table_round(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

int table_init(uint64_t rate, uint32_t max_buckets)
{
	struct seg_header *h = NULL;
	uint64_t *index = MAP_FAILED;
	size_t seg_bytes, index_bytes, off, slots = 64;
	struct timespec ts;
	struct rlimit fsize;
	int fd = -1, saved;

	if (max_buckets < 1)
		max_buckets = 1;
	if (max_buckets > SEG_MAX_BUCKETS)
		max_buckets = SEG_MAX_BUCKETS;
	/* At most half full, so that a probe always meets an empty slot. */
	while (slots < 2 * (size_t)max_buckets)
		slots *= 2;
	index_bytes = table_round(slots * sizeof(uint64_t), 4096);
	off = table_round(sizeof(struct seg_header), 64);
	seg_bytes = table_round(off + (size_t)max_buckets * sizeof(struct seg_bucket), 4096);

	/* ftruncate past RLIMIT_FSIZE would raise SIGXFSZ, which kills the program. */
	if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
	    fsize.rlim_cur < seg_bytes) {
		errno = EFBIG;
		return -1;
	}
	index = mmap(NULL, index_bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (index == MAP_FAILED)
		goto err;
	fd = memfd_create(SEG_NAME, MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)seg_bytes) != 0)
		goto err;
	h = mmap(NULL, seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		h = NULL;
		goto err;
	}
	close(fd);
	fd = -1;

	/* The memfd is zero-filled: only the non-zero fields are written. */
	h->version = SEG_VERSION;
	h->header_size = sizeof(struct seg_header);
	h->size = seg_bytes;
	h->pid = (uint32_t)getpid();
	h->max_frames = SEG_MAX_FRAMES;
	h->bucket_size = sizeof(struct seg_bucket);
	h->sample_rate = rate;
	h->bucket_off = off;
	h->bucket_cap = max_buckets;
	if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
		h->created_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(h->magic, SEG_MAGIC, sizeof(h->magic)); /* last: the header is whole */

	table_buckets = (struct seg_bucket *)((char *)h + off);
	table_cap = max_buckets;
	table_index = index;
	table_index_bytes = index_bytes;
	table_mask = (uint32_t)(slots - 1);
	table_seg_bytes = seg_bytes;
	table_rate = rate;
	table_mutex = 0;
	__atomic_store_n(&table_seg, h, __ATOMIC_RELEASE);
	return 0;

err:
	saved = errno;
	if (h != NULL)
		munmap(h, seg_bytes);
	if (fd >= 0)
		close(fd);
	if (index != MAP_FAILED)
		munmap(index, index_bytes);
	errno = saved;
	return -1;
}

void table_fini(void)
{
	struct seg_header *h = table_seg;

	if (h == NULL)
		return;
	__atomic_store_n(&table_seg, NULL, __ATOMIC_RELEASE);
	munmap(h, table_seg_bytes);
	munmap(table_index, table_index_bytes);
	table_index = NULL;
	table_buckets = NULL;
}

int table_restart(void)
{
	struct seg_header *old = table_seg;
	uint64_t *old_index = table_index;
	size_t old_bytes = table_seg_bytes, old_index_bytes = table_index_bytes;
	uint32_t cap = table_cap;
	int rc;

	table_mutex = 0;
	if (old == NULL)
		return -1;
	table_seg = NULL;
	rc = table_init(table_rate, cap);
	/* Only after the new one exists, so a failure leaves nothing mapped twice. */
	munmap(old, old_bytes);
	munmap(old_index, old_index_bytes);
	return rc;
}

/* 64-bit hash of kind and frames (multiply-xorshift per frame). */
static uint64_t table_hash(uint32_t kind, const uint64_t *frames, uint32_t n)
{
	uint64_t h = 0x243F6A8885A308D3ull ^ ((uint64_t)kind << 56) ^ n;
	uint32_t i;

	for (i = 0; i < n; i++) {
		h = (h ^ frames[i]) * 0x9E3779B97F4A7C15ull;
		h ^= h >> 32;
	}
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ull;
	return h ^ (h >> 32);
}

static int table_match(const struct seg_bucket *k, uint64_t h, uint32_t kind, uint32_t flags,
		       const uint64_t *frames, uint32_t n)
{
	uint32_t i;

	if (k->hash != h || k->kind != kind || k->flags != flags || k->nframes != n)
		return 0;
	for (i = 0; i < n; i++)
		if (k->frames[i] != frames[i])
			return 0;
	return 1;
}

/*
 * Probes for the bucket: its number, or -1 with *slot the empty slot where
 * it would go. Safe without the lock: slots only go from 0 to final, and a
 * slot is published after its bucket (acquire pairs with that release).
 */
static int32_t table_probe(uint64_t h, uint32_t kind, uint32_t flags, const uint64_t *frames,
			   uint32_t n, uint32_t *slot)
{
	uint32_t i = (uint32_t)h & table_mask, tag = (uint32_t)(h >> 32);
	uint64_t e;

	for (;; i = (i + 1) & table_mask) {
		e = __atomic_load_n(&table_index[i], __ATOMIC_ACQUIRE);
		if (e == 0) {
			*slot = i;
			return -1;
		}
		if ((uint32_t)(e >> 32) == tag &&
		    table_match(&table_buckets[(uint32_t)e - 1], h, kind, flags, frames, n))
			return (int32_t)((uint32_t)e - 1);
	}
}

int32_t table_bucket(uint32_t kind, uint32_t flags, const uint64_t *frames, uint32_t n)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);
	struct seg_bucket *k;
	uint64_t h, count;
	uint32_t slot;
	int32_t b;

	if (hd == NULL || n > SEG_MAX_FRAMES)
		return -1;
	h = table_hash(kind, frames, n);
	b = table_probe(h, kind, flags, frames, n, &slot);
	if (b >= 0)
		return b;

	lock_take(&table_mutex);
	b = table_probe(h, kind, flags, frames, n, &slot); /* another thread may have added it */
	if (b >= 0)
		goto out;
	count = hd->bucket_count;
	if (count >= table_cap) {
		__atomic_fetch_add(&hd->dropped, 1, __ATOMIC_RELAXED);
		goto out;
	}
	k = &table_buckets[count];
	k->kind = kind;
	k->flags = flags;
	k->nframes = n;
	k->hash = h;
	memcpy(k->frames, frames, n * sizeof(frames[0]));
	__atomic_store_n(&hd->bucket_count, count + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&table_index[slot], (uint64_t)(uint32_t)(h >> 32) << 32 | (count + 1),
			 __ATOMIC_RELEASE);
	b = (int32_t)count;
out:
	lock_give(&table_mutex);
	return b;
}

/*
 * The writer's side of the sequence lock. segment.h says the counters
 * change only between seq := odd and seq_end := seq := even, and a reader
 * that copies the bucket in address order (seq first, seq_end last) trusts
 * it when seq == seq_end, even. That alone would let a reader that reads
 * seq = 2k before a writer starts and seq_end = 2k before it finishes
 * accept torn counters; so the writer also stores the odd value into
 * seq_end first. Then any counter store a reader saw implies it sees
 * seq_end odd or newer (x86-64 keeps stores, and loads, in program order;
 * the fences stop the compiler reordering), and the reader's rule holds.
 */
void table_add(int32_t b, int is_free, uint64_t size, double w)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);
	struct seg_bucket *k;
	uint64_t s;
	unsigned spins = 0;

	if (hd == NULL || b < 0 || (uint64_t)b >= __atomic_load_n(&hd->bucket_count, __ATOMIC_ACQUIRE))
		return;
	k = &table_buckets[b];
	for (;;) {
		s = __atomic_load_n(&k->seq, __ATOMIC_RELAXED);
		if (!(s & 1) && __atomic_compare_exchange_n(&k->seq, &s, s + 1, 0, __ATOMIC_ACQUIRE,
							    __ATOMIC_RELAXED))
			break;
		if (++spins < 64)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
	__atomic_store_n(&k->seq_end, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (is_free) {
		k->free_samples += 1;
		k->free_sampled_bytes += size;
		k->free_objects += w;
		k->free_bytes += (double)size * w;
	} else {
		k->alloc_samples += 1;
		k->alloc_sampled_bytes += size;
		k->alloc_objects += w;
		k->alloc_bytes += (double)size * w;
	}
	__atomic_store_n(&k->seq_end, s + 2, __ATOMIC_RELEASE);
	__atomic_store_n(&k->seq, s + 2, __ATOMIC_RELEASE);
}

void table_count_dropped(void)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);

	if (hd != NULL)
		__atomic_fetch_add(&hd->dropped, 1, __ATOMIC_RELAXED);
}

void table_count_thread(void)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);

	if (hd != NULL)
		__atomic_fetch_add(&hd->threads_created, 1, __ATOMIC_RELAXED);
}

const struct seg_header *table_segment(void)
{
	return __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);
}

void table_lock(void)
{
	lock_take(&table_mutex);
}

void table_unlock(void)
{
	lock_give(&table_mutex);
}
