#ifndef CPROF_SEGMENT_H
#define CPROF_SEGMENT_H
/*
 * segment — the layout of the shared-memory segment in which libcprof.so
 * publishes its sampled allocation statistics, and which cprof-attach
 * reads from outside at any moment. This header is the contract between
 * the two; changing the layout means bumping SEG_VERSION.
 *
 * Invariants:
 *  - the segment is a memfd named SEG_NAME, mapped MAP_SHARED in the
 *    target; /proc/PID/maps shows it as "/memfd:cprof-segment (deleted)".
 *    cprof-attach reads it with process_vm_readv, so only a user allowed
 *    to ptrace the target can read it; nothing is ever written to a file;
 *  - the header is written once, before the segment is published, except
 *    these counters, which only grow (atomic): bucket_count, dropped,
 *    threads_created, no_pool, fork_started, fork_copied,
 *    waits_untracked, and for labels labelset_count, lslot_count,
 *    labels_dropped, labels_truncated, lslots_full, labels_unbalanced;
 *  - a fork child's segment starts with the parent's buckets, same order,
 *    each reduced to its live blocks (alloc = parent's alloc - free, free
 *    0; thread buckets empty) as they were at the fork: the parent changes
 *    no counter after a fork until the child has set fork_copied (or a
 *    bound of 10 ms has passed); inherited says how many;
 *  - injection (cprof_inject_arm, doc/inject.md): inject_ns and
 *    inject_state are written by the shim at every arm and disarm, and
 *    sample_rate, block_rate and mutex_fraction at an arm; an arm after
 *    a disarm zeroes every bucket's counters (each under its sequence
 *    lock) before inject_state says ARMED again: the counters then cover
 *    the allocations and waits since inject_ns only. reader_beat_ns is
 *    the one field the reader writes (CLOCK_MONOTONIC, process_vm_writev
 *    at each read); the shim only reads it, to disarm itself when it is
 *    older than SEG_INJECT_QUIET_NS;
 *  - strings (settings[].name and .value, note, allocator) are
 *    NUL-terminated within their arrays when written by the shim, but a
 *    reader must not rely on it;
 *  - buckets are append-only: a bucket is fully written (kind, hash,
 *    frames, zero counters) before bucket_count is increased past it
 *    (release order), and its kind, flags, nframes, hash and frames never
 *    change afterwards;
 *  - a bucket's counters change only inside a per-bucket sequence lock:
 *    the writer stores seq := odd, then seq_end := the same odd value,
 *    then the counters, then seq_end := seq := the next even value. A
 *    reader trusts a copy of a bucket when seq == seq_end, even, and seq
 *    is unchanged in a second read made after the first: the second read
 *    is what makes the rule safe whatever order the copy was made in;
 *  - hash covers kind, labels and frames, not flags: readers compare the
 *    frames and labels themselves;
 *  - frames are return addresses, the innermost first: frames[0] is in
 *    the function that called malloc (or pthread_create; for a BLOCK
 *    bucket the function that waited, for a MUTEX bucket the function
 *    that released the contended lock);
 *  - the counters of an ALLOC or THREAD bucket are the heap's (alloc_*,
 *    free_*); those of a BLOCK or MUTEX bucket are wait's, in the same
 *    bytes (the union below): raw sampled events and their measured ns,
 *    and the unbiased estimates of contentions and delay; reserved words
 *    stay 0, the estimates are finite and never negative. A fork child's
 *    BLOCK and MUTEX buckets start empty, like THREAD buckets;
 *  - labels (layout 4): a label set is a sorted list of at most
 *    SEG_LABEL_PAIRS (key, value) strings, NUL-terminated within their
 *    arrays when written; set id i (1-based; 0: no labels) is
 *    labelsets[i - 1]. Sets are append-only and immutable like buckets:
 *    written whole before labelset_count is increased past them
 *    (release). A bucket's labels is the set in force on the thread when
 *    it was sampled, and is part of the bucket's key (and hash);
 *  - a label slot belongs to one thread at a time (its tid) and only that
 *    thread writes it, under the slot's sequence lock (the buckets' rule:
 *    seq odd, seq_end := odd, the change, seq_end := seq := even). Each
 *    change of the thread's labels adds ring[changes % SEG_LABEL_RING] =
 *    (CLOCK_MONOTONIC ns, set) and changes += 1, so the set in force at
 *    time t is the newest entry at or before t, while it is in the ring;
 *    cur is the set in force now. A slot whose thread ended keeps state
 *    EXITED (and its ring) until another thread claims it;
 *    lslot_count (only grows) says how many slots were ever claimed;
 *  - a fork child's segment has the parent's label sets (same ids) and
 *    fresh slots: the forking thread's, and later its new threads';
 *  - everything here is untrusted input for cprof-attach: it validates
 *    every size, offset and count before use.
 */
#include <stddef.h>
#include <stdint.h>

#define SEG_MAGIC "CPROFSG1"       /* 8 bytes, no NUL */
#define SEG_VERSION 4u         /* 4: label sets, label slots, a bucket's labels */
#define SEG_VERSION_MIN 3u     /* 3: BLOCK and MUTEX buckets, block_rate, mutex_fraction (no labels) */
#define SEG_NAME "cprof-segment"
#define SEG_MAX_FRAMES 64
#define SEG_DEFAULT_BUCKETS 32768  /* CPROF_MAX_BUCKETS overrides */
#define SEG_MAX_BUCKETS (1u << 20)

#define SEG_DEFAULT_RATE 524288    /* CPROF_SAMPLE_RATE's default */
#define SEG_DEFAULT_BLOCK_RATE 100000 /* CPROF_BLOCK_RATE's default, ns */
#define SEG_DEFAULT_MUTEX_FRACTION 10 /* CPROF_MUTEX_FRACTION's default */
#define SEG_MAX_SETTINGS 4

/* seg_setting.problem */
#define SEG_SETTING_NOT_A_NUMBER 1u /* garbage, or an unknown suffix */
#define SEG_SETTING_NEGATIVE 2u
#define SEG_SETTING_TOO_LARGE 3u   /* more than the variable allows */

/* seg_header.state */
#define SEG_STATE_SAMPLING 0u
#define SEG_STATE_OFF 1u           /* the shim passes everything through; note says why */

/* seg_header.flags */
#define SEG_FLAG_NO_POOL 1u        /* the shim's pool could not be reserved (address-space limit, strict overcommit) */

/* seg_header.inject_state */
#define SEG_INJECT_NONE 0u         /* preloaded: not injected */
#define SEG_INJECT_ARMED 1u        /* GOT slots point at the shim */
#define SEG_INJECT_DORMANT 2u      /* disarmed: slots restored, nothing recorded */
#define SEG_INJECT_EJECTED 3u      /* disarmed by the shim itself: its reader went quiet */
#define SEG_INJECT_QUIET_NS 10000000000ull /* how long a reader may stay quiet */

/* seg_bucket.kind */
#define SEG_KIND_ALLOC 1u   /* sampled allocations from this stack */
#define SEG_KIND_THREAD 2u  /* threads created from this stack (every one, not sampled) */
#define SEG_KIND_BLOCK 3u   /* sampled waits of this stack: contended locks, condition variables, semaphores, joins */
#define SEG_KIND_MUTEX 4u   /* sampled releases of contended locks by this stack, with the delay its waiters accumulated */
#define SEG_KIND_MAX 4u

/* seg_bucket.flags */
#define SEG_BUCKET_TRUNCATED 1u /* deeper than SEG_MAX_FRAMES: the outermost frames were dropped */
/*
 * A BLOCK bucket's primitive (SEG_PRIM_*) in flags bits 8-11: part of the
 * bucket's identity, so that waits of one stack on a mutex and on a
 * condition variable stay apart. 0 (a shim before it): not said. Readers
 * that know only SEG_BUCKET_TRUNCATED ignore these bits.
 */
#define SEG_BUCKET_PRIM_SHIFT 8
#define SEG_BUCKET_PRIM_MASK (0xfu << SEG_BUCKET_PRIM_SHIFT)
#define SEG_PRIM_MUTEX 1u
#define SEG_PRIM_RWLOCK 2u
#define SEG_PRIM_COND 3u
#define SEG_PRIM_SEM 4u
#define SEG_PRIM_JOIN 5u

/* Labels (layout 4): limits, past which a pair or string is cut and counted (labels_truncated). */
#define SEG_LABEL_PAIRS 8          /* pairs in one set */
#define SEG_LABEL_KEY 32           /* bytes of a key, NUL included */
#define SEG_LABEL_VALUE 64         /* bytes of a value, NUL included */
#define SEG_LABEL_RING 256         /* changes a slot remembers */
#define SEG_DEFAULT_LABELSETS 4096 /* distinct label sets a process may have */
#define SEG_DEFAULT_LSLOTS 1024    /* threads that may carry labels at once */

/* seg_labelset.flags */
#define SEG_LABELS_TRUNCATED 1u    /* a pair or a string was cut to fit */

/* seg_lslot.state */
#define SEG_LSLOT_FREE 0u
#define SEG_LSLOT_LIVE 1u
#define SEG_LSLOT_EXITED 2u        /* its thread ended; ring kept until reused */

/* An environment variable the shim rejected: the default (used) is in force. */
struct seg_setting {
	char name[32];                /* e.g. "CPROF_SAMPLE_RATE" */
	char value[48];               /* what it was set to, cut to fit */
	uint32_t problem;             /* SEG_SETTING_* */
	uint32_t reserved;
	uint64_t used;                /* the value in force instead */
};

struct seg_header {
	char magic[8];                /* SEG_MAGIC */
	uint32_t version;             /* SEG_VERSION */
	uint32_t header_size;         /* sizeof(struct seg_header) */
	uint64_t size;                /* bytes in the whole segment */
	uint32_t pid;                 /* the process that created it */
	uint32_t max_frames;          /* SEG_MAX_FRAMES */
	uint32_t bucket_size;         /* sizeof(struct seg_bucket) */
	uint32_t flags;               /* SEG_FLAG_* */
	uint64_t sample_rate;         /* mean bytes between samples; 0: sampling off */
	uint64_t bucket_off;          /* offset of bucket 0 from the segment start */
	uint64_t bucket_cap;          /* buckets that fit */
	uint64_t bucket_count;        /* buckets published (atomic, only grows) */
	uint64_t dropped;             /* samples lost: bucket or sampled-block table full (atomic) */
	uint64_t threads_created;     /* pthread_create calls seen (atomic) */
	uint64_t created_ns;          /* CLOCK_REALTIME when the segment was made */
	uint32_t state;               /* SEG_STATE_* */
	uint32_t nsettings;           /* settings[] used: the rejected variables */
	uint64_t inherited;           /* buckets copied from the parent at fork (0: none) */
	uint32_t parent_pid;          /* whose they were */
	uint32_t reserved0;
	uint64_t no_pool;             /* sampled blocks given by the real allocator instead of the pool (atomic) */
	uint64_t fork_started;        /* forks begun by this process (its fork handlers only) */
	uint64_t fork_copied;         /* the highest of them whose child has copied the buckets */
	struct seg_setting settings[SEG_MAX_SETTINGS];
	char allocator[64];           /* the real allocator's object, e.g. "libjemalloc.so.2" */
	char note[160];               /* SEG_STATE_OFF: why, one line */
	uint64_t block_rate;          /* CPROF_BLOCK_RATE, ns (Go's SetBlockProfileRate); 0: no BLOCK buckets */
	uint64_t mutex_fraction;      /* CPROF_MUTEX_FRACTION: 1 in N contended releases; 0: no MUTEX buckets */
	uint64_t waits_untracked;     /* contended waits the mutex profile could not follow (atomic) */
	/* Injection (doc/inject.md), from reserved words: 0 in a preloaded shim. */
	uint64_t inject_ns;           /* CLOCK_REALTIME of the last cprof_inject_arm; 0: preloaded */
	uint64_t reader_beat_ns;      /* CLOCK_MONOTONIC, written by cprof-attach at each read while it captures */
	uint32_t inject_state;        /* SEG_INJECT_* */
	uint32_t reserved1;
	uint64_t reserved[2];
	/* Layout 4 from here: a layout-3 header ends above (SEG_HEADER_V3_SIZE). */
	uint64_t labelset_off;        /* offset of seg_labelset 0 */
	uint64_t labelset_cap;        /* sets that fit */
	uint64_t labelset_count;      /* sets published (atomic, only grows) */
	uint64_t lslot_off;           /* offset of seg_lslot 0 */
	uint64_t lslot_cap;           /* slots that fit */
	uint64_t lslot_count;         /* slots ever claimed (atomic, only grows) */
	uint32_t labelset_size;       /* sizeof(struct seg_labelset) */
	uint32_t lslot_size;          /* sizeof(struct seg_lslot) */
	uint64_t labels_dropped;      /* label changes whose set could not be interned: table full (atomic) */
	uint64_t labels_truncated;    /* pairs or strings cut to fit (atomic) */
	uint64_t lslots_full;         /* threads that found no free slot (atomic) */
	uint64_t labels_unbalanced;   /* pops without a push; pushes past the saved depth (atomic) */
	uint64_t reserved4[4];
};

#define SEG_HEADER_V3_SIZE 816u    /* sizeof(struct seg_header) in layout 3 */

struct seg_label {
	char key[SEG_LABEL_KEY];
	char value[SEG_LABEL_VALUE];
};

struct seg_labelset {
	uint64_t hash;                /* of n and the pairs, as the shim interns them */
	uint32_t n;                   /* pairs used, <= SEG_LABEL_PAIRS */
	uint32_t flags;               /* SEG_LABELS_* */
	struct seg_label pair[SEG_LABEL_PAIRS]; /* sorted by key; unused bytes 0 */
};

struct seg_lchange {
	uint64_t ns;                  /* CLOCK_MONOTONIC when the set took effect */
	uint32_t set;                 /* its id; 0: no labels */
	uint32_t reserved;
};

struct seg_lslot {
	uint64_t seq;                 /* sequence lock: odd while the slot changes */
	uint32_t tid;                 /* the owner's thread id */
	uint32_t state;               /* SEG_LSLOT_* */
	uint64_t changes;             /* changes written since claimed */
	uint32_t cur;                 /* the set in force now */
	uint32_t reserved;
	struct seg_lchange ring[SEG_LABEL_RING];
	uint64_t seq_end;             /* == seq when the slot is whole */
};

struct seg_bucket {
	uint64_t seq;                 /* sequence lock: odd while the counters change */
	uint32_t kind;                /* SEG_KIND_* */
	uint32_t flags;               /* SEG_BUCKET_* */
	uint32_t nframes;             /* <= max_frames */
	uint32_t labels;              /* label set id in force when sampled (0: none; layout 3: 0) */
	uint64_t hash;                /* of kind, labels and frames */
	union {
		struct { /* SEG_KIND_ALLOC, SEG_KIND_THREAD */
			/* Raw sample counts, as Go's runtime.MemProfileRecord keeps them. */
			uint64_t alloc_samples, alloc_sampled_bytes;
			uint64_t free_samples, free_sampled_bytes;
			/*
			 * Unbiased estimates: each sampled allocation of size s adds
			 * w = 1 / P(sampled) = 1 / (1 - exp(-s / rate)) objects and s * w
			 * bytes (w = 1 when rate is 1).
			 */
			double alloc_objects, alloc_bytes;
			double free_objects, free_bytes;
		};
		struct seg_wait { /* SEG_KIND_BLOCK, SEG_KIND_MUTEX */
			uint64_t events;      /* sampled events recorded */
			uint64_t event_ns;    /* their measured delay, unscaled */
			uint64_t reserved[2];
			/*
			 * Unbiased estimates. BLOCK: a wait of d ns at rate r adds
			 * w = 1 (d >= r) or r / d (sampled with probability d / r)
			 * contentions and d * w ns. MUTEX: a sampled release (1 in
			 * N) adds N contentions and N times the delay its waiters
			 * accumulated since the previous release (see shim/waiters.h).
			 */
			double contentions;
			double delay_ns;
			double reserved_d[2];
		} wait;
	};
	uint64_t seq_end;             /* == seq when the counters are whole */
	uint64_t frames[SEG_MAX_FRAMES];
};

/*
 * The layout is read by other builds of cprof-attach: a field moved by
 * accident must break the build, not the reader. Layout 3's header ends
 * where layout 4's fields begin.
 */
_Static_assert(offsetof(struct seg_header, labelset_off) == SEG_HEADER_V3_SIZE,
	       "layout 4's fields start where a layout-3 header ends");
_Static_assert(sizeof(struct seg_labelset) == 16 + SEG_LABEL_PAIRS * sizeof(struct seg_label),
	       "a label set is its hash, n, flags and pairs");
_Static_assert(sizeof(struct seg_lslot) == 40 + SEG_LABEL_RING * sizeof(struct seg_lchange),
	       "a label slot is its lock, owner, counters and ring");

#endif
