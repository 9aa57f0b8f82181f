#ifndef CPROF_RECORD_H
#define CPROF_RECORD_H
/*
 * record — from copied thread states to samples in the profile: unwind,
 * symbolize, intern. This is the one place where the unwind module and the
 * model meet.
 *
 * Invariants:
 *  - every distinct address is symbolized once; later samples find its
 *    location id in a cache (the symbol search costs far more than a probe);
 *    source lines are added after the capture, once per address
 *    (recorder_lines());
 *  - every address in an object gets a function name: its symbol, else
 *    "module+0xOFF" after the function start its FDE gives (OFF an ELF
 *    address, the same in every run); an address outside every object is
 *    named from the target's perf map (JIT code) or left without a line;
 *  - the main executable's mapping is the profile's first mapping when the
 *    executable has one, as pprof expects;
 *  - a stack cut by the depth limit gets a "[truncated]" root frame and a
 *    stack whose unwinding stopped early a "[partial: CAUSE]" root frame
 *    (CAUSE from unwind_cause_name()), so neither masquerades as a
 *    complete stack and the reader sees why;
 *  - not thread-safe: the consumer thread alone uses it.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/profile.h"
#include "unwind/unwinder.h"

#define RECORD_MAX_DEPTH 512 /* frames kept per stack */

struct recorder;

struct record_stats {
	uint64_t stacks;      /* stacks recorded */
	uint64_t frames;      /* frames in them */
	uint64_t truncated;   /* stacks cut at the depth limit */
	uint64_t partial;     /* stacks whose unwinding stopped early */
	uint64_t partial_by[UNWIND_NCAUSES]; /* ... by cause */
	uint64_t recovered;   /* stacks completed by frame-pointer recovery */
	uint64_t failed;      /* stacks the profile refused (caps) */
	uint64_t repeated;    /* samples that reused a key's last stack */
	uint64_t not_unwound; /* samples recorded as a marker, not unwound: a stop was asked */
	/* recorder_lines(): */
	uint64_t lines_addrs;   /* distinct addresses looked at */
	uint64_t lines_found;   /* ... that got source lines */
	uint64_t lines_cached;  /* ... answered by the line cache */
	uint64_t lines_dwarf;   /* ... looked up in DWARF with libdw */
	uint64_t lines_objects; /* objects whose DWARF gave lines */
	uint64_t lines_ns;      /* time it took (finding debug files included) */
	uint64_t lines_cpu_ns;  /* ... of which CPU time */
};

/* Add the counts of b to a. */
void record_stats_add(struct record_stats *a, const struct record_stats *b);

/*
 * A recorder adding to prof for process pid, keeping at most max_depth
 * frames. NULL with errno set on failure (EACCES: the maps are not ours to
 * read).
 */
struct recorder *recorder_new(struct profile *prof, pid_t pid, size_t max_depth);

/* Release it (the profile stays). */
void recorder_free(struct recorder *r);

/*
 * Unwind img and add one sample with values and labels; remember its
 * stack under key (a tid) for recorder_repeat(). 0 or -1.
 */
int recorder_add(struct recorder *r, uint64_t key, const struct thread_image *img,
		 const int64_t *values, const struct profile_label_in *labels, size_t nlabels);

/* Keep the stack of the last recorder_add() under key too (best effort). */
void recorder_remember(struct recorder *r, uint64_t key);

/* Add a sample with the stack last recorded under key. 0, or -1 when there is none. */
int recorder_repeat(struct recorder *r, uint64_t key, const int64_t *values,
		    const struct profile_label_in *labels, size_t nlabels);

/*
 * A second chance for a stack whose walk stopped for want of stack bytes:
 * fn builds from img, in its own storage, an image with more of the
 * stack, returning 0 (the walk is then done again on it, and kept when it
 * goes further), or -1. when says which walks it is for:
 * RECORDER_REFILL_SIGNAL, those that crossed a signal frame (a handler on
 * an alternate signal stack, of which a perf sample holds only the
 * alternate stack); RECORDER_REFILL_ANY, all. At most RECORDER_REFILLS,
 * tried in the order added until one goes further. -1 when full or out of
 * memory (stacks then stay as they are).
 */
typedef int recorder_refill_fn(void *ctx, const struct thread_image *img,
			       struct thread_image *out);
#define RECORDER_REFILL_SIGNAL 1u
#define RECORDER_REFILL_ANY 2u
#define RECORDER_REFILLS 2
int recorder_add_refill(struct recorder *r, unsigned when, recorder_refill_fn *fn, void *ctx);

/*
 * Add a sample whose stack is already known: pcs[0..n) are call sites
 * (return address - 1), innermost first; truncated adds the "[truncated]"
 * root frame. 0 or -1.
 */
int recorder_add_pcs(struct recorder *r, const uint64_t *pcs, size_t n, int truncated,
		     const int64_t *values, const struct profile_label_in *labels, size_t nlabels);

/*
 * The kernel frames of the next recorder_add() (names[0..n), innermost first:
 * the kernel's side of the call the user stack ends in): they go below
 * the user stack, in a mapping of their own named "[kernel.kallsyms]" as
 * perf names it, so that pprof's -focus and -ignore reach them. Taken by
 * that one call only; names are copied, n is capped at
 * RECORD_KERNEL_MAX.
 */
#define RECORD_KERNEL_MAX 64
void recorder_kernel(struct recorder *r, const char *const *names, unsigned n);

/*
 * A stack kept by its caller for a sample added later (an off-CPU wait is
 * weighed when it ends): img unwound, with the kernel frames of
 * recorder_kernel(), into location ids, as recorder_add() would record
 * it: a malloc'd array of *n ids (the caller frees it), or NULL (none, or
 * out of memory). At most RECORD_IDS_MAX ids.
 */
#define RECORD_IDS_MAX (RECORD_MAX_DEPTH + 1 + RECORD_KERNEL_MAX)
uint64_t *recorder_stack_copy(struct recorder *r, const struct thread_image *img, uint32_t *n);

/* The location id of a marker frame (a name in brackets, no mapping), or 0. */
uint64_t recorder_marker_id(struct recorder *r, const char *marker);

/* Add a sample whose stack is ids[0..n) (leaf first), as recorder_stack() gave them. 0 or -1. */
int recorder_add_ids(struct recorder *r, const uint64_t *ids, size_t n, const int64_t *values,
		     const struct profile_label_in *labels, size_t nlabels);

/* Add a sample whose only frame is a marker naming what happened. 0 or -1. */
int recorder_marker_sample(struct recorder *r, const char *marker, const int64_t *values,
			   const struct profile_label_in *labels, size_t nlabels);

/*
 * How much of stack region of its copy the last recorder_add() walk read,
 * whether it wanted more (*overran, see unwinder.h) and whether it reached
 * the thread's start (*complete: neither partial nor truncated).
 */
size_t recorder_stack_used(const struct recorder *r, unsigned region, int *overran,
			   int *complete);

struct debuginfo;
struct linecache;

/*
 * After the capture: give every location of an object with DWARF (its own,
 * a separate debug file, debuginfod: unwind/debuginfo.h) its source lines
 * and inlined frames, innermost first, and mark the mappings so. di is the
 * run's cache of debug files; NULL (--no-lines) does nothing. lc is the
 * per-user cache of lines resolved in earlier runs (unwind/linecache.h),
 * asked first for each address of an object with a build ID, given what
 * DWARF answered and flushed at the end; NULL (--no-line-cache): DWARF
 * alone. A source calls this once, when its samples are all recorded.
 */
void recorder_lines(struct recorder *r, struct debuginfo *di, struct linecache *lc);

/* The profile it adds to. */
struct profile *recorder_profile(struct recorder *r);

/* Counters so far. */
const struct record_stats *recorder_stats(const struct recorder *r);

#endif
