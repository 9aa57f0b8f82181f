#ifndef CPROF_ATTACH_LABELS_H
#define CPROF_ATTACH_LABELS_H
/*
 * labelsrc — the labels a target's threads carried (include/cprof.h),
 * read from its shim's segment while a cpu, wall or threads capture runs,
 * so that each sample gets the labels in force at the moment it was taken.
 *
 * Invariants:
 *  - each thread's history is kept here, by tid, as the changes its slot's
 *    ring showed, in time order; the segment is read again when a sample
 *    is newer than the last read, at most every LABELSRC_MIN_MS (a read
 *    copies every labelled thread's slot, ~4 KiB each), so the ring of
 *    SEG_LABEL_RING changes need only outlast the time between two reads.
 *    A caller that must be exact holds a sample until labelsrc_ready()
 *    says a read after its time is due (ptrace), or reads just before it
 *    takes a batch of samples in (labelsrc_sync: perf). Changes the ring lost before they were read leave a gap:
 *    a sample in it gets no labels and is counted in unknown;
 *  - a sample of a thread that never changed its labels (no slot), or
 *    older than its first change, gets none; so does every sample of a
 *    target without the shim, without labels, or with a layout-3 shim;
 *  - one lock guards a reader: labelsrc_trysync() may read from another
 *    thread while the recording thread asks; the strings a sample gets
 *    are copied out (labelsrc_text), never pointers into a copy a read
 *    may release;
 *  - everything read is untrusted (segment.h checks it); a set id past
 *    the copy or an empty key gives no label; so does a reserved key
 *    (labelsrc_reserved: cprof's own "thread", "tid", "pid", "process",
 *    "state", "syscall", "bytes"; Pyroscope's "service_name" and any key
 *    starting "__"), with one note per key a capture (LABELSRC_NOTED
 *    keys, then one for the rest);
 *  - a slot's changes are taken only for a thread that has a history
 *    already or is a thread of the target when read (/proc/PID/task): the
 *    histories follow the threads there are, not what the segment claims;
 *  - every table has a cap: LABELSRC_MAX_THREADS threads, LABELSRC_MAX_CHANGES
 *    changes a thread (the oldest half dropped, a gap, past it), and
 *    LABELSRC_MAX_ENTRIES changes in all (past it every thread's oldest
 *    half goes), so a reader holds at most 16 MiB of history.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/source/segread.h"

#define LABELSRC_MAX_THREADS 65536
#define LABELSRC_MAX_CHANGES 65536
#define LABELSRC_MAX SEG_LABEL_PAIRS /* labels a sample gets from the program */
#define LABELSRC_MAX_ENTRIES (1u << 20) /* history entries, all threads */
#define LABELSRC_NOTED 16

/* The reserved keys a capture has noted (labelsrc_set). */
struct labelsrc_keys {
	pid_t pid;                                /* whose labels, for the note */
	size_t n;
	char key[LABELSRC_NOTED][SEG_LABEL_KEY];
	int more;                                 /* past LABELSRC_NOTED: said once */
};

struct label_src;
struct profile_label_in;

struct labelsrc_stats {
	uint64_t reads;      /* segment reads */
	uint64_t labelled;   /* samples that got labels */
	uint64_t unknown;    /* samples in a gap of a thread's history */
	uint64_t torn;       /* slots left out of a read (changing all the time) */
	uint64_t entries;    /* history entries there is room for, all threads: <= LABELSRC_MAX_ENTRIES */
};

/* A reader of pid's labels; NULL when out of memory. Finds the segment on first use. */
struct label_src *labelsrc_new(pid_t pid);

void labelsrc_free(struct label_src *s);

/* Room for one sample's label strings, copied out of the reader (labelsrc_at). */
struct labelsrc_text {
	char key[LABELSRC_MAX][SEG_LABEL_KEY];
	char value[LABELSRC_MAX][SEG_LABEL_VALUE];
};

/*
 * The labels thread tid carried at ns (CLOCK_MONOTONIC) into l (at most
 * max, at most LABELSRC_MAX; their strings copied into text, so that they
 * outlive a read by another thread). Returns how many.
 */
size_t labelsrc_at(struct label_src *s, uint32_t tid, uint64_t ns, struct profile_label_in *l,
		   size_t max, struct labelsrc_text *text);

/*
 * The labels of set id of copy c into l (at most max, strings in c),
 * reserved keys left out and noted once each in keys (NULL: not noted).
 * Returns how many. For a bucket's labels.
 */
size_t labelsrc_set(const struct seg_copy *c, uint32_t id, struct profile_label_in *l,
		    size_t max, struct labelsrc_keys *keys);

/* Whose key k is when the program may not use it ("cprof's own", "Pyroscope's"), or NULL. */
const char *labelsrc_reserved(const char *k);

/*
 * For a sampler whose samples are read late (perf): how many ms until the
 * segment should be read again (labelsrc_sync), LABELSRC_POLL_MS after the
 * last read, so that rings are read before they wrap; or -1 when there is
 * nothing to follow (no segment, or no thread with labels yet; a segment
 * is looked for at most every 100 ms).
 */
int labelsrc_poll(struct label_src *s);

#define LABELSRC_POLL_MS 10
#define LABELSRC_MIN_MS 1

/*
 * Whether a sample at ns can be labelled exactly now: the last read began
 * after it, or a new one may be made (LABELSRC_MIN_MS since the last), or
 * there is nothing to read (no shim, no segment yet). 0: hold the sample
 * and ask again, at the latest LABELSRC_MIN_MS later.
 */
int labelsrc_ready(const struct label_src *s, uint64_t ns);

/*
 * From another thread than the one that records (ptrace's tracer, which
 * keeps its turn on a busy machine where the recording thread may not):
 * read the segment if the last read is min_ms old or more, unless the
 * recording thread is inside the reader just now (then nothing: the
 * tracer never waits for it). 1 when read.
 */
int labelsrc_trysync(struct label_src *s, unsigned min_ms);

/* Reads the segment now (whatever the time since the last read). */
void labelsrc_sync(struct label_src *s);

/*
 * One warning line when the program's labels were not all recorded: the
 * shim's counters in header h (sets dropped or cut, threads without a
 * slot, unbalanced pops), and with s (NULL: none) the samples that fell
 * in a gap of their thread's history. Nothing when all is well.
 */
void labelsrc_warn(const struct label_src *s, const struct seg_header *h, pid_t pid,
		   const char *comm);

/* The header of the reader's last copy, or NULL when it has none. */
const struct seg_header *labelsrc_header(const struct label_src *s);

/* What the reader did. */
const struct labelsrc_stats *labelsrc_stats(const struct label_src *s);

#endif
