#ifndef CPROF_TOPTAB_H
#define CPROF_TOPTAB_H
/*
 * toptab — the tables of `cprof-attach top`: each interval's profile
 * folded into self and total per (thread, function name), for the last
 * interval and since the start, and each thread's value, so that the view
 * can be sorted, and filtered to one thread, without capturing again.
 *
 * Invariants:
 *  - functions are keyed by name, not by a profile's ids, which are the
 *    profile's own: a function keeps its row from one interval to the next;
 *  - a function counts once per sample in total however often it
 *    recurses; self is the innermost frame's (an inlined callee's when
 *    there is one); a frame nothing could name is "0xADDR";
 *  - every table has a hard cap (TOPTAB_MAX_*): past it, a sample's
 *    value still counts in the totals and its thread's, its functions are
 *    counted in toptab_dropped() and left out;
 *  - names are kept as the target gave them: whoever prints them
 *    sanitizes them (common/sanitize.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TOPTAB_MAX_NAMES (1u << 16)
#define TOPTAB_MAX_ENTRIES (1u << 18)
#define TOPTAB_MAX_THREADS 4096u
#define TOPTAB_THREAD_NAME 64

enum { TOPTAB_INTERVAL, TOPTAB_ALL, TOPTAB_SPANS };

struct profile;
struct toptab;

struct toptab_fn {
	const char *name;
	int64_t self[TOPTAB_SPANS], total[TOPTAB_SPANS];
};

struct toptab_thread {
	pid_t tid;
	char name[TOPTAB_THREAD_NAME];
	int64_t value[TOPTAB_SPANS];
};

/* An empty table, or NULL (out of memory: message printed). */
struct toptab *toptab_new(void);
void toptab_free(struct toptab *t);

/*
 * Fold one interval's profile by its sample value vi: the last interval's
 * columns start from zero, the since-start ones add. 0, or -1 out of memory
 * (the tables stay usable).
 */
int toptab_fold(struct toptab *t, const struct profile *p, size_t vi);

/*
 * The functions of thread tid (0: every thread), largest first by their
 * total (by_total) or self in span (TOPTAB_INTERVAL or TOPTAB_ALL), at
 * most max of them into out with both spans' values; sum[span] is the
 * value they are shares of (the thread's or the process's). The number
 * written.
 */
size_t toptab_functions(const struct toptab *t, int span, pid_t tid, int by_total,
			struct toptab_fn *out, size_t max, int64_t sum[TOPTAB_SPANS]);

/* The threads, largest value of span first, at most max into out. The number written. */
size_t toptab_threads(const struct toptab *t, int span, struct toptab_thread *out, size_t max);

/* Whether thread tid was seen (since the start). */
int toptab_has_thread(const struct toptab *t, pid_t tid);

/* Functions left out since the start because a table was full. */
uint64_t toptab_dropped(const struct toptab *t);

#endif
