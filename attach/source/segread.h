#ifndef CPROF_ATTACH_SEGMENT_H
#define CPROF_ATTACH_SEGMENT_H
/*
 * segread — a consistent copy of the shared-memory segment that
 * libcprof.so keeps in a target (layout: shim/segment.h), read from
 * outside while the target runs.
 *
 * Invariants:
 *  - the segment is untrusted input: every size, offset and count in its
 *    header is checked against the mapping it was found in and against the
 *    layout this build knows; a segment of another layout version is
 *    refused with a message naming both versions;
 *  - the strings of a copied header (settings, allocator, note) are
 *    NUL-terminated and nsettings is at most SEG_MAX_SETTINGS;
 *  - layouts SEG_VERSION_MIN (3: no labels; every bucket's labels read
 *    as 0) to SEG_VERSION are read; the header of a layout-3 segment is
 *    shorter, its label fields read as 0;
 *  - the label tables (layout 4) are checked like the buckets: sizes,
 *    offsets and caps against the mapping; a set with more than
 *    SEG_LABEL_PAIRS pairs is emptied and counted in sets_invalid (ids
 *    stay indices: set id i is sets[i - 1]); every key and value of a
 *    copied set is NUL-terminated; a bucket naming a set past the copy is
 *    left out as invalid; a slot copy is whole (its sequence lock) or left
 *    out and counted in slots_torn; its ring may name sets past the copy
 *    (segment_labelset() then gives NULL);
 *  - a copy never holds a torn bucket: a bucket whose sequence lock shows
 *    it was being updated is read again (a few times), else left out and
 *    counted in torn;
 *  - a copy holds only buckets of the four known kinds (SEG_KIND_ALLOC,
 *    THREAD, BLOCK, MUTEX) with at most max_frames frames; a BLOCK or
 *    MUTEX bucket's reserved words are 0 and its estimates finite and not
 *    negative. Any other bucket is left out and counted in invalid;
 *  - what a copy holds is bounded whatever the header claims: at most
 *    SEGMENT_MAX_READ_BUCKETS buckets holding SEGMENT_MAX_READ_FRAMES
 *    frames in all, SEGMENT_MAX_READ_SETS label sets and
 *    SEGMENT_MAX_READ_SLOTS slots; all copies held at once in this
 *    process take at most SEGMENT_MAX_HELD bytes; and a copy's buckets
 *    hold at most SEGMENT_MAX_READ_PCS distinct return addresses, all
 *    copies' together SEGMENT_MAX_HELD_PCS distinct (process, address)
 *    pairs (a profile's size follows them; a process is the read
 *    callback's context, so -d's two copies of one count once). Past a cap the rest is
 *    not read and is counted (capped, sets_capped, slots_capped); the
 *    buckets are read a chunk at a time, so nothing is allocated in
 *    proportion to what is left out;
 *  - reading goes through a callback, so tests can hand in any bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shim/segment.h"

#define SEGMENT_RETRIES 8
#define SEGMENT_MAX_LABEL_ROWS (1u << 20) /* label sets or slots a segment may declare */
/*
 * What one copy keeps: twice the shim's default table of buckets, and of
 * their frames what a program's code has; of the label tables what the
 * shim makes (it never makes more).
 */
#define SEGMENT_MAX_READ_BUCKETS 65536u
#define SEGMENT_MAX_READ_FRAMES (1u << 21)
#define SEGMENT_MAX_READ_PCS (1u << 17) /* distinct return addresses a copy */
#define SEGMENT_MAX_HELD_PCS (1u << 18) /* distinct (process, address) pairs, all copies held */
#define SEGMENT_MAX_READ_SETS SEG_DEFAULT_LABELSETS
#define SEGMENT_MAX_READ_SLOTS SEG_DEFAULT_LSLOTS
#define SEGMENT_MAX_HELD ((size_t)128 << 20) /* bytes all copies held at once */
#define SEGMENT_CHUNK 256u /* buckets read at a time */

/* Read n bytes at addr into buf; 0, or -1 when unreadable. */
typedef int segment_read_fn(void *ctx, uint64_t addr, void *buf, size_t n);

struct seg_copy {
	struct seg_header h;
	struct seg_bucket *b;   /* whole buckets, in segment order */
	size_t n;
	size_t torn;            /* buckets left out: updated during every read */
	size_t invalid;         /* buckets left out: malformed */
	size_t capped;          /* buckets not read: past a cap (SEGMENT_MAX_*) */
	size_t sets_capped;     /* label sets not read: past a cap */
	size_t slots_capped;    /* label slots not read: past a cap */
	size_t held;            /* bytes charged to SEGMENT_MAX_HELD */
	int pc_ref;             /* its buckets' return addresses are in the shared set */
	struct seg_labelset *sets; /* label set id i is sets[i - 1] */
	size_t nsets;
	size_t sets_invalid;    /* sets emptied: malformed */
	struct seg_lslot *slots; /* whole slots (segment_copy_slots): new or changed ones */
	size_t nslots;
	size_t slots_torn;      /* slots left out: changing during every read */
	struct seg_slot_seen *seen; /* by slot index: the owner and changes last copied */
	size_t nseen;
};

/* What a copy of a label slot saw, so that the next read skips it unchanged. */
struct seg_slot_seen {
	uint32_t tid;
	uint64_t changes;
};

/*
 * Copy the segment at [addr, addr + len) into c. Returns 0; -1 when the
 * segment is unreadable or malformed (message in why, cap bytes), -2 when
 * it is of another layout version (message in why).
 */
int segment_copy(struct seg_copy *c, segment_read_fn *read, void *ctx, uint64_t addr,
		 uint64_t len, char *why, size_t cap);

/*
 * Like segment_copy, without the buckets: the header, the label slots,
 * then the label sets (after the slots, so that every set a slot names
 * when read is in the copy). 0, -1 or -2 as segment_copy; a layout-3
 * segment gives none of either.
 *
 * prev, when not NULL, is the previous copy of the same segment (same
 * pid, creation time and layout): its sets are taken over (sets never
 * change once published; prev keeps none) and only those published since
 * are read; a slot whose owner and change count are what prev saw is not
 * copied again (one read of its first 24 bytes), so c->slots holds the
 * new and changed slots only: copying every slot and set on every read
 * was much of the attacher's CPU when many threads carry labels.
 */
int segment_copy_slots(struct seg_copy *c, segment_read_fn *read, void *ctx, uint64_t addr,
		       uint64_t len, struct seg_copy *prev, char *why, size_t cap);

/* Bytes all copies hold now (charged against SEGMENT_MAX_HELD). */
size_t segment_held_bytes(void);

/* Free a copy's buckets, sets and slots. */
void segment_release(struct seg_copy *c);

/* Label set id of c, or NULL for 0, an id past the copy, or an emptied set. */
const struct seg_labelset *segment_labelset(const struct seg_copy *c, uint32_t id);

/* "alloc", "thread", "block" or "mutex"; NULL for a kind this build does not know. */
const char *segment_kind_name(uint32_t kind);

/*
 * The bucket of base that holds the same stack as b (now's bucket i), or
 * NULL: buckets are append-only, so it is at index i unless torn buckets
 * were left out of either copy; looked for there, then up to 64 below and
 * above, nearest first.
 */
const struct seg_bucket *segment_base_of(const struct seg_copy *base, size_t i,
					 const struct seg_bucket *b);

/* What a BLOCK or MUTEX bucket says (Go's contentions/count and delay/nanoseconds). */
struct segment_wait {
	double contentions; /* estimated waits (BLOCK) or contended releases (MUTEX) */
	double delay_ns;    /* estimated time waited, ns */
	uint64_t events;    /* raw: events recorded */
	uint64_t event_ns;  /* raw: their measured ns, unscaled */
};

/*
 * The numbers of b (SEG_KIND_BLOCK or SEG_KIND_MUTEX), minus base's when
 * base is not NULL (the change over a window); a difference that would be
 * negative (a base from another process) is 0.
 */
void segment_wait_values(const struct seg_bucket *b, const struct seg_bucket *base,
			 struct segment_wait *v);

/*
 * Whether the target records kind (SEG_KIND_BLOCK or SEG_KIND_MUTEX): 1;
 * or 0 with a one-line message in why (cap bytes) naming the variable to
 * set, e.g. "the block profile is off in it: start it with
 * CPROF_BLOCK_RATE=10us (not 0)".
 */
int segment_wait_enabled(const struct seg_header *h, uint32_t kind, char *why, size_t cap);

/*
 * Find the segment of process pid in its memory map: [*addr, *addr+*len).
 * Returns 1 when found; 2 when libcprof.so is loaded but has made no
 * segment yet (it does at its first sample point); 0 when the process has
 * none (the shim is not loaded); -1 when the map cannot be read (errno
 * set).
 */
int segment_find(pid_t pid, uint64_t *addr, uint64_t *len);

/* A segment_read_fn reading process (pid_t)(intptr_t)ctx with process_vm_readv. */
int segment_read_process(void *ctx, uint64_t addr, void *buf, size_t n);

/*
 * A segment held through a descriptor of its memfd, which outlives the
 * process: what it had at its exit can still be read. start and len are
 * where the process mapped it.
 */
struct segment_held {
	int fd;
	uint64_t start, len;
};

/*
 * Open the memfd behind [addr, addr + len) of pid through
 * /proc/PID/map_files (root, CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE): a
 * regular file at least len long, read-only. 0, or -1 (h->fd is -1).
 */
int segment_hold(struct segment_held *h, pid_t pid, uint64_t addr, uint64_t len);

/* Close what segment_hold() opened (safe on a failed or released one). */
void segment_unhold(struct segment_held *h);

/* A segment_read_fn reading a held segment (ctx: struct segment_held *) with pread. */
int segment_read_held(void *ctx, uint64_t addr, void *buf, size_t n);

#endif
