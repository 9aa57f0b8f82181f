/*
 * table.c — the producer side of the segment contract (shim/segment.h):
 * creating the memfd segment, appending buckets, and updating a bucket's
 * counters under its sequence lock. A lookup of an existing bucket is a
 * hash of the stack (~1 ns a frame) and a lock-free probe of a private
 * index whose slot holds 32 bits of the hash next to the bucket number,
 * so a probe touches the segment only on a likely match; a new bucket
 * costs the append lock and one 616-byte write. Memory: the segment is
 * ~616 bytes a bucket (20 MB for the default 32768, touched only as
 * buckets are used), the index 16 bytes a bucket. Every offset, cap and
 * count used to write into the segment is the shim's own copy, never read
 * back from the shared header: anyone who can write the target's memory
 * from outside could change the header, not where the shim writes.
 */
#include "shim/table.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "shim/clock.h"
#include "shim/lock.h"

static struct seg_header *table_seg;    /* NULL: the table is off */
static size_t table_seg_bytes;
static struct seg_bucket *table_buckets;
static uint32_t table_cap;
static uint64_t table_count;            /* buckets published: header.bucket_count's own copy */
static uint64_t table_nsets;            /* label sets published: header.labelset_count's own copy */
static size_t table_boff, table_lset_off, table_lslot_off; /* the layout, for table_cap buckets */
static uint32_t table_pid;              /* who made the segment: header.pid's own copy */
static uint64_t *table_index;           /* slot: hash tag << 32 | bucket + 1; 0 empty */
static size_t table_index_bytes;
static uint32_t table_mask;
static uint64_t table_rate;
static int table_mutex;
static uint64_t table_fork_count;       /* bucket_count when table_lock() took the lock */
static uint64_t table_fork_sets;        /* labelset_count then */
static uint64_t table_fork_gen;         /* this fork's number: header.fork_started */
static uint64_t table_wait_gen;         /* parent: no counter changes before fork_copied reaches it */
static struct seg_header table_info;    /* what table_set_info() gave */

static size_t table_round(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

/*
 * A new segment for cap buckets at this rate: memfd, header written, magic
 * not yet (the caller publishes it with table_publish). Sets the layout
 * (table_boff, table_lset_off, table_lslot_off). NULL on failure, errno
 * set.
 */
static struct seg_header *table_new_segment(uint64_t rate, uint32_t cap, size_t *bytes)
{
	struct seg_header *h;
	size_t seg_bytes, off = table_round(sizeof(struct seg_header), 64);
	struct timespec ts;
	struct rlimit fsize;
	int fd, saved;

	size_t lset_off = table_round(off + (size_t)cap * sizeof(struct seg_bucket), 64);
	size_t lslot_off = table_round(lset_off + SEG_DEFAULT_LABELSETS * sizeof(struct seg_labelset), 64);

	/* The label tables follow the buckets; like them, pages are touched only as used. */
	seg_bytes = table_round(lslot_off + SEG_DEFAULT_LSLOTS * sizeof(struct seg_lslot), 4096);
	table_boff = off;
	table_lset_off = lset_off;
	table_lslot_off = lslot_off;
	/* ftruncate past RLIMIT_FSIZE would raise SIGXFSZ, which kills the program. */
	if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
	    fsize.rlim_cur < seg_bytes) {
		errno = EFBIG;
		return NULL;
	}
	fd = memfd_create(SEG_NAME, MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	h = ftruncate(fd, (off_t)seg_bytes) == 0 ?
		    mmap(NULL, seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
	saved = errno;
	close(fd);
	if (h == MAP_FAILED) {
		errno = saved;
		return NULL;
	}
	/* The memfd is zero-filled: only the non-zero fields are written. */
	h->version = SEG_VERSION;
	h->header_size = sizeof(struct seg_header);
	h->size = seg_bytes;
	h->pid = (uint32_t)getpid();
	table_pid = h->pid;
	h->max_frames = SEG_MAX_FRAMES;
	h->bucket_size = sizeof(struct seg_bucket);
	h->sample_rate = rate;
	h->bucket_off = off;
	h->bucket_cap = cap;
	if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
		h->created_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	h->flags = table_info.flags;
	h->state = table_info.state;
	h->nsettings = table_info.nsettings;
	memcpy(h->settings, table_info.settings, sizeof(h->settings));
	memcpy(h->allocator, table_info.allocator, sizeof(h->allocator));
	memcpy(h->note, table_info.note, sizeof(h->note));
	h->block_rate = table_info.block_rate;
	h->mutex_fraction = table_info.mutex_fraction;
	h->inject_ns = table_info.inject_ns;
	h->inject_state = table_info.inject_state;
	h->labelset_off = lset_off;
	h->labelset_cap = SEG_DEFAULT_LABELSETS;
	h->labelset_size = sizeof(struct seg_labelset);
	h->lslot_off = lslot_off;
	h->lslot_cap = SEG_DEFAULT_LSLOTS;
	h->lslot_size = sizeof(struct seg_lslot);
	*bytes = seg_bytes;
	return h;
}

/* Makes h the table's segment and writes its magic last (release): the header is whole. */
static void table_publish(struct seg_header *h, size_t bytes)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(h->magic, SEG_MAGIC, sizeof(h->magic));
	table_buckets = (struct seg_bucket *)((char *)h + table_boff);
	table_seg_bytes = bytes;
	__atomic_store_n(&table_seg, h, __ATOMIC_RELEASE);
}

uint64_t *table_new_index(size_t entries, size_t *bytes, uint32_t *mask)
{
	uint64_t *index;
	size_t slots = 64;

	/* At most half full, so that a probe always meets an empty slot. */
	while (slots < 2 * entries)
		slots *= 2;
	*bytes = table_round(slots * sizeof(uint64_t), 4096);
	index = mmap(NULL, *bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (index == MAP_FAILED)
		return NULL;
	*mask = (uint32_t)(slots - 1);
	return index;
}

int table_init(uint64_t rate, uint32_t max_buckets)
{
	struct seg_header *h;
	uint64_t *index;
	size_t index_bytes, seg_bytes;
	uint32_t mask;
	int saved;

	if (max_buckets < 1)
		max_buckets = 1;
	if (max_buckets > SEG_MAX_BUCKETS)
		max_buckets = SEG_MAX_BUCKETS;
	if ((index = table_new_index(max_buckets, &index_bytes, &mask)) == NULL)
		return -1;
	h = table_new_segment(rate, max_buckets, &seg_bytes);
	if (h == NULL) {
		saved = errno;
		munmap(index, index_bytes);
		errno = saved;
		return -1;
	}
	table_cap = max_buckets;
	table_count = 0;
	table_nsets = 0;
	table_index = index;
	table_index_bytes = index_bytes;
	table_mask = mask;
	table_rate = rate;
	table_mutex = 0;
	table_publish(h, seg_bytes);
	return 0;
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

/*
 * A whole copy of bucket s, read under its sequence lock as a reader
 * would (the parent keeps writing the shared original after fork). Gives
 * up waiting after a bound (a stopped parent must not hang its child) and
 * keeps the last copy.
 */
static void table_read_bucket(struct seg_bucket *c, const struct seg_bucket *s)
{
	uint64_t s1, s2;
	unsigned tries;

	for (tries = 0; tries < 4096; tries++) {
		s1 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		memcpy(c, s, sizeof(*c));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
		if (s1 == s2 && !(s1 & 1) && c->seq_end == s1)
			break;
		if (tries < 64)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
	if (c->nframes > SEG_MAX_FRAMES)
		c->nframes = SEG_MAX_FRAMES;
}

/*
 * Bucket d of the child: the parent's bucket s reduced to its live blocks
 * (allocated minus freed, free counters zero), so that a block the child
 * frees later leaves it. A thread bucket starts empty: the child has
 * created no thread yet.
 */
static void table_inherit_bucket(struct seg_bucket *d, const struct seg_bucket *s)
{
	struct seg_bucket c;

	table_read_bucket(&c, s);
	d->kind = c.kind;
	d->flags = c.flags;
	d->nframes = c.nframes;
	d->hash = c.hash;
	d->labels = c.labels;
	memcpy(d->frames, c.frames, c.nframes * sizeof(c.frames[0]));
	if (c.kind != SEG_KIND_ALLOC)
		return;
	d->alloc_samples = c.alloc_samples > c.free_samples ? c.alloc_samples - c.free_samples : 0;
	d->alloc_sampled_bytes = c.alloc_sampled_bytes > c.free_sampled_bytes ?
					 c.alloc_sampled_bytes - c.free_sampled_bytes : 0;
	d->alloc_objects = c.alloc_objects > c.free_objects ? c.alloc_objects - c.free_objects : 0;
	d->alloc_bytes = c.alloc_bytes > c.free_bytes ? c.alloc_bytes - c.free_bytes : 0;
}

/* In the child: tells the parent (through the shared old segment) that this fork's copy is done. */
static void table_signal_copied(struct seg_header *old)
{
	uint64_t v = __atomic_load_n(&old->fork_copied, __ATOMIC_RELAXED);

	while (v < table_fork_gen && !__atomic_compare_exchange_n(&old->fork_copied, &v, table_fork_gen,
								  1, __ATOMIC_RELEASE,
								  __ATOMIC_RELAXED))
		;
}

/*
 * In the parent, before the first counter change after a fork: waits
 * (yielding) until the child has copied the buckets, so that its copy
 * is the state at the fork; gives up after 10 ms (a stopped or dead
 * child must not stall the parent).
 */
static void table_wait_child(struct seg_header *hd)
{
	uint64_t gen = __atomic_load_n(&table_wait_gen, __ATOMIC_ACQUIRE), start = 0, now;
	while (gen != 0 && __atomic_load_n(&hd->fork_copied, __ATOMIC_ACQUIRE) < gen) {
		if (!(now = shim_mono_ns()))
			break;
		if (start == 0)
			start = now;
		else if (now - start > 10000000u)
			break;
		sched_yield();
	}
	/* Only this fork's wait ends here; a later fork's is not cleared. */
	__atomic_compare_exchange_n(&table_wait_gen, &gen, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

int table_restart(void)
{
	struct seg_header *old = table_seg, *h;
	struct seg_bucket *ob = table_buckets;
	size_t old_bytes = table_seg_bytes, bytes;
	uint64_t i, n = table_fork_count;
	uint32_t parent = table_pid;

	table_mutex = 0;
	table_wait_gen = 0; /* the child waits for no one */
	if (old == NULL)
		return -1;
	table_seg = NULL;
	h = table_new_segment(table_rate, table_cap, &bytes);
	if (h == NULL) {
		table_signal_copied(old);
		munmap(old, old_bytes);
		munmap(table_index, table_index_bytes);
		table_index = NULL;
		table_buckets = NULL;
		return -1;
	}
	if (n > table_cap)
		n = table_cap;
	/* Same bucket numbers: the private index, the pool records, the block table stay right. */
	for (i = 0; i < n; i++)
		table_inherit_bucket((struct seg_bucket *)((char *)h + table_boff) + i, &ob[i]);
	table_count = n;
	h->bucket_count = n;
	h->inherited = n;
	/* Label sets are immutable once published: the same ids, so buckets and threads keep theirs. */
	n = table_fork_sets < SEG_DEFAULT_LABELSETS ? table_fork_sets : SEG_DEFAULT_LABELSETS;
	memcpy((char *)h + table_lset_off, (const char *)old + table_lset_off,
	       n * sizeof(struct seg_labelset));
	table_nsets = n;
	h->labelset_count = n;
	h->parent_pid = parent;
	h->dropped = 0;
	table_publish(h, bytes);
	table_signal_copied(old);
	munmap(old, old_bytes);
	return 0;
}

void table_drop_child(void)
{
	struct seg_header *old = table_seg;

	table_mutex = 0;
	table_wait_gen = 0;
	if (old == NULL)
		return;
	table_signal_copied(old); /* the parent must not wait for a copy that will not come */
	table_fini();
}

/* 64-bit hash of kind, label set and frames (multiply-xorshift per frame). */
static uint64_t table_hash(uint32_t kind, uint32_t labels, const uint64_t *frames, uint32_t n)
{
	uint64_t h = 0x243F6A8885A308D3ull ^ ((uint64_t)kind << 56) ^ ((uint64_t)labels << 24) ^ n;
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
		       uint32_t labels, const uint64_t *frames, uint32_t n)
{
	uint32_t i;

	if (k->hash != h || k->kind != kind || k->flags != flags || k->nframes != n ||
	    k->labels != labels)
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
static int32_t table_probe(uint64_t h, uint32_t kind, uint32_t flags, uint32_t labels,
			   const uint64_t *frames, uint32_t n, uint32_t *slot)
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
		    table_match(&table_buckets[(uint32_t)e - 1], h, kind, flags, labels, frames, n))
			return (int32_t)((uint32_t)e - 1);
	}
}

int32_t table_bucket(uint32_t kind, uint32_t flags, const uint64_t *frames, uint32_t n)
{
	return table_bucket_labeled(kind, flags, 0, frames, n);
}

int32_t table_bucket_labeled(uint32_t kind, uint32_t flags, uint32_t labels,
			     const uint64_t *frames, uint32_t n)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);
	struct seg_bucket *k;
	uint64_t h, count;
	uint32_t slot;
	int32_t b;

	if (hd == NULL || n > SEG_MAX_FRAMES)
		return -1;
	h = table_hash(kind, labels, frames, n);
	b = table_probe(h, kind, flags, labels, frames, n, &slot);
	if (b >= 0)
		return b;

	lock_take(&table_mutex);
	b = table_probe(h, kind, flags, labels, frames, n, &slot); /* another thread may have added it */
	if (b >= 0)
		goto out;
	count = table_count;
	if (count >= table_cap) {
		__atomic_fetch_add(&hd->dropped, 1, __ATOMIC_RELAXED);
		goto out;
	}
	k = &table_buckets[count];
	k->kind = kind;
	k->flags = flags;
	k->nframes = n;
	k->hash = h;
	k->labels = labels;
	memcpy(k->frames, frames, n * sizeof(frames[0]));
	__atomic_store_n(&table_count, count + 1, __ATOMIC_RELEASE);
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
 * table_open takes the lock (the bucket to change, or NULL), table_close
 * gives it back.
 */
static struct seg_bucket *table_open(int32_t b, uint64_t *seq)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);
	struct seg_bucket *k;
	uint64_t s;
	unsigned spins = 0;

	if (hd == NULL || b < 0 || (uint64_t)b >= __atomic_load_n(&table_count, __ATOMIC_ACQUIRE))
		return NULL;
	if (__builtin_expect(__atomic_load_n(&table_wait_gen, __ATOMIC_RELAXED) != 0, 0))
		table_wait_child(hd);
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
	*seq = s;
	return k;
}

/* Ends table_open's change: the counters are whole again. */
static void table_close(struct seg_bucket *k, uint64_t s)
{
	__atomic_store_n(&k->seq_end, s + 2, __ATOMIC_RELEASE);
	__atomic_store_n(&k->seq, s + 2, __ATOMIC_RELEASE);
}

void table_add(int32_t b, int is_free, uint64_t size, double w)
{
	struct seg_bucket *k;
	uint64_t s;

	if ((k = table_open(b, &s)) == NULL)
		return;
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
	table_close(k, s);
}

void table_add_wait(int32_t b, uint64_t events, uint64_t ns, double contentions, double delay)
{
	struct seg_bucket *k;
	uint64_t s;

	if ((k = table_open(b, &s)) == NULL)
		return;
	k->wait.events += events;
	k->wait.event_ns += ns;
	k->wait.contentions += contentions;
	k->wait.delay_ns += delay;
	table_close(k, s);
}

void table_count_untracked(void)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);

	if (hd != NULL)
		__atomic_fetch_add(&hd->waits_untracked, 1, __ATOMIC_RELAXED);
}

void table_count_dropped(void)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);

	if (hd != NULL)
		__atomic_fetch_add(&hd->dropped, 1, __ATOMIC_RELAXED);
}

void table_count_no_pool(void)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);

	if (hd != NULL)
		__atomic_fetch_add(&hd->no_pool, 1, __ATOMIC_RELAXED);
}

void table_set_info(const struct seg_header *info)
{
	table_info.flags = info->flags;
	table_info.state = info->state;
	table_info.nsettings = info->nsettings > SEG_MAX_SETTINGS ? SEG_MAX_SETTINGS : info->nsettings;
	memcpy(table_info.settings, info->settings, sizeof(table_info.settings));
	memcpy(table_info.allocator, info->allocator, sizeof(table_info.allocator));
	memcpy(table_info.note, info->note, sizeof(table_info.note));
	table_info.block_rate = info->block_rate;
	table_info.mutex_fraction = info->mutex_fraction;
	table_info.allocator[sizeof(table_info.allocator) - 1] = 0;
	table_info.note[sizeof(table_info.note) - 1] = 0;
}

void table_inject_set(uint64_t ns, uint32_t state)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);

	table_info.inject_ns = ns;
	table_info.inject_state = state;
	if (hd == NULL)
		return;
	__atomic_store_n(&hd->inject_ns, ns, __ATOMIC_RELEASE);
	__atomic_store_n(&hd->inject_state, state, __ATOMIC_RELEASE);
}

uint64_t table_reader_beat(void)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);

	return hd != NULL ? __atomic_load_n(&hd->reader_beat_ns, __ATOMIC_ACQUIRE) : 0;
}

void table_set_rates(uint64_t rate, uint64_t block_rate, uint64_t mutex_fraction)
{
	struct seg_header *hd = __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);

	table_rate = rate;
	table_info.block_rate = block_rate;
	table_info.mutex_fraction = mutex_fraction;
	if (hd == NULL)
		return;
	__atomic_store_n(&hd->sample_rate, rate, __ATOMIC_RELAXED);
	__atomic_store_n(&hd->block_rate, block_rate, __ATOMIC_RELAXED);
	__atomic_store_n(&hd->mutex_fraction, mutex_fraction, __ATOMIC_RELAXED);
}

void table_reset_counters(void)
{
	struct seg_bucket *k;
	uint64_t i, n = __atomic_load_n(&table_count, __ATOMIC_ACQUIRE), s;

	for (i = 0; i < n; i++) {
		if ((k = table_open((int32_t)i, &s)) == NULL)
			return;
		/* Both members of the union are the same 64 bytes. */
		memset(&k->wait, 0, sizeof(k->wait));
		table_close(k, s);
	}
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

struct seg_header *table_segment_labels(void)
{
	return __atomic_load_n(&table_seg, __ATOMIC_ACQUIRE);
}

struct seg_labelset *table_labelsets(struct seg_header *h)
{
	return (struct seg_labelset *)((char *)h + table_lset_off);
}

struct seg_lslot *table_lslots(struct seg_header *h)
{
	return (struct seg_lslot *)((char *)h + table_lslot_off);
}

uint64_t table_labelset_count(void)
{
	return __atomic_load_n(&table_nsets, __ATOMIC_ACQUIRE);
}

void table_labelset_published(struct seg_header *h, uint64_t n)
{
	__atomic_store_n(&table_nsets, n, __ATOMIC_RELEASE);
	__atomic_store_n(&h->labelset_count, n, __ATOMIC_RELEASE);
}

void table_lock(void)
{
	lock_take(&table_mutex);
	table_fork_count = table_seg != NULL ? table_count : 0;
	table_fork_sets = table_seg != NULL ? __atomic_load_n(&table_nsets, __ATOMIC_ACQUIRE) : 0;
}

void table_unlock(void)
{
	lock_give(&table_mutex);
}

void table_fork_prepare(void)
{
	table_lock();
	if (table_seg != NULL)
		table_fork_gen = __atomic_add_fetch(&table_seg->fork_started, 1, __ATOMIC_RELAXED);
}

void table_fork_parent(void)
{
	if (table_seg != NULL)
		__atomic_store_n(&table_wait_gen, table_fork_gen, __ATOMIC_RELEASE);
	table_unlock();
}

void table_reset_lock(void)
{
	table_mutex = 0;
}
