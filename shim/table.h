#ifndef CPROF_SHIM_TABLE_H
#define CPROF_SHIM_TABLE_H
/*
 * table — the shared-memory segment of shim/segment.h and its buckets: one
 * bucket per (kind, flags, stack), found through a private open-addressing
 * index, created on first use and never removed.
 *
 * Invariants:
 *  - the segment is a memfd mapped MAP_SHARED whose fd is closed at once;
 *    its header is complete before the magic is written, and the magic is
 *    written last (release), so a reader that sees the magic sees the
 *    whole header;
 *  - buckets are appended under one leaf lock (shim/lock.h) and published
 *    in this order: bucket contents, header.bucket_count (release), the
 *    index slot (release). Lookups read the index without a lock;
 *  - counters change under the bucket's own sequence lock, whose even-to-
 *    odd transition of seq is also the writers' mutual exclusion. The
 *    writer also stores the odd value into seq_end before touching the
 *    counters (see table.c for why the reader's check needs it);
 *  - every table has a hard cap (CPROF_MAX_BUCKETS, at most
 *    SEG_MAX_BUCKETS); past it a sample is counted in header.dropped;
 *  - the segment also holds the label tables (segment.h), laid out here
 *    after the buckets; a fork child's copy has the parent's sets as
 *    table_lock() saw them and empty slots;
 *  - every offset, cap and count the shim writes by is its own copy: the
 *    shared header is written, never read back for a write;
 *  - nothing here allocates from the heap or calls the allocator, so it is
 *    safe inside malloc; the module has no dependency on other shim files.
 */
#include <stddef.h>
#include <stdint.h>

#include "shim/segment.h"

/*
 * Creates the segment for max_buckets buckets (clamped to
 * [1, SEG_MAX_BUCKETS]) and sampling rate rate, and the private index.
 * 0 on success; -1 (errno set) leaves the table off: every other function
 * then does nothing and table_bucket() returns -1.
 */
int table_init(uint64_t rate, uint32_t max_buckets);

/*
 * A private open-addressing index for entries entries (at most half full),
 * zero-filled, untouched until used: its size in *bytes and its slot mask
 * in *mask. For table.c's buckets and labels.c's sets. NULL when mmap
 * fails.
 */
uint64_t *table_new_index(size_t entries, size_t *bytes, uint32_t *mask);

/* Unmaps the segment and index; the table is off afterwards. */
void table_fini(void);

/*
 * In a fork child: makes a segment of its own (own memfd, this pid) with
 * the parent's parameters, whose buckets are the parent's as the last
 * table_lock() saw them, same numbers, each reduced to its live blocks
 * (segment.h), and unmaps the inherited one, which belongs to the parent.
 * Only syscalls and copies: no lock, no allocation. Resets the lock. 0,
 * or -1 with the table off.
 */
int table_restart(void);

/*
 * What every segment this process makes carries besides its buckets:
 * info's flags, state, nsettings, settings, allocator, note, block_rate
 * and mutex_fraction. Call
 * before table_init; fork children keep it.
 */
void table_set_info(const struct seg_header *info);

/*
 * In a fork child that needs no segment (a dormant injected shim): lets
 * go of the parent's (unmapped here, the parent told not to wait) and
 * leaves the table off until the next table_init.
 */
void table_drop_child(void);

/*
 * Injection (segment.h): the header's inject_ns and inject_state, now and
 * in any later segment (a fork child's); the reader's last beat (0: none
 * or no segment); new rates for an arm; every bucket's counters to zero,
 * each under its sequence lock (a re-arm's fresh window).
 */
void table_inject_set(uint64_t ns, uint32_t state);
uint64_t table_reader_beat(void);
void table_set_rates(uint64_t rate, uint64_t block_rate, uint64_t mutex_fraction);
void table_reset_counters(void);

/* header.no_pool += 1 (a sampled block the pool could not give). */
void table_count_no_pool(void);

/*
 * The index of the bucket for (kind, flags, frames[0..n)), created if new;
 * -1 when the table is off or full (full counts header.dropped). n is at
 * most SEG_MAX_FRAMES. Lock-free when the bucket exists.
 */
int32_t table_bucket(uint32_t kind, uint32_t flags, const uint64_t *frames, uint32_t n);

/* table_bucket with the label set labels (0: none) in the bucket's key. */
int32_t table_bucket_labeled(uint32_t kind, uint32_t flags, uint32_t labels,
			     const uint64_t *frames, uint32_t n);

/*
 * Adds one sampled allocation (or, with is_free, one free) of size bytes
 * and weight w to bucket b: raw samples += 1, sampled bytes += size,
 * objects += w, bytes += size * w, under the bucket's sequence lock.
 */
void table_add(int32_t b, int is_free, uint64_t size, double w);

/*
 * Adds to a BLOCK or MUTEX bucket b, under its sequence lock: events raw
 * events of ns measured nanoseconds in all, and their estimates.
 */
void table_add_wait(int32_t b, uint64_t events, uint64_t ns, double contentions, double delay);

/* header.waits_untracked += 1 (a contended wait the mutex profile could not follow). */
void table_count_untracked(void);

/* header.dropped += 1 (a sample lost elsewhere, e.g. a full block table). */
void table_count_dropped(void);

/* header.threads_created += 1. */
void table_count_thread(void);

/* The segment, or NULL when the table is off (for tests and the shim). */
const struct seg_header *table_segment(void);

/*
 * The same, writable, for shim/labels.c alone: it owns the label tables'
 * contents (header labelset_* and lslot_* counters, the sets, the slots);
 * table.c makes them (empty) and, in a fork child, copies the sets.
 */
struct seg_header *table_segment_labels(void);

/*
 * Where h's label sets and slots are, and how many sets are published:
 * from the shim's own copy of the layout and count, never read back from
 * the shared header. table_labelset_published(h, n) makes n the count,
 * ours and h's (call with labels.c's interning lock held).
 */
struct seg_labelset *table_labelsets(struct seg_header *h);
struct seg_lslot *table_lslots(struct seg_header *h);
uint64_t table_labelset_count(void);
void table_labelset_published(struct seg_header *h, uint64_t n);

/*
 * Takes / releases the append lock (around fork, so no child inherits it
 * held); table_lock also notes the bucket count for table_restart.
 */
void table_lock(void);
void table_unlock(void);

/* In a fork child, whether or not the table exists: the lock free again. */
void table_reset_lock(void);

/*
 * The fork handlers' halves: prepare takes the lock, notes the bucket
 * count and numbers the fork (header.fork_started); parent releases the
 * lock and makes the next counter change wait for the child's copy
 * (header.fork_copied, set by table_restart in the child; 10 ms at most).
 */
void table_fork_prepare(void);
void table_fork_parent(void);

#endif
