#ifndef CPROF_SETTLE_H
#define CPROF_SETTLE_H
/*
 * settle — a CPU profile's totals made to agree with the clocks after the
 * samples were added: what each thread's samples weigh, the threads alive
 * at the end with their CPU clocks, and the scaling of samples by thread
 * (profile_scale_values) that both samplers end with. The perf source
 * scales every thread to its clock (its weights are periods, an
 * estimate); the ptrace source, whose weights are measured, scales only
 * the threads that ended, to the CPU the process clock shows and no
 * thread's clock did (short-lived threads caught by a tick stand for the
 * ones that were not).
 *
 * Invariants:
 *  - a sample is found by its "tid" label: a profile without it is left
 *    as it is, and so is every sample without one (markers);
 *  - a factor is never negative; tids not given a factor keep theirs (1)
 *    unless they ended, when they take the ended factor;
 *  - at most SETTLE_MAX threads are tracked (later ones are not scaled).
 */
#include <stdint.h>
#include <sys/types.h>

#include "common/u64map.h"

#define SETTLE_MAX 65536

struct profile;

struct settle {
	struct u64map weight;  /* tid -> what its samples weigh (ns) */
	struct u64map live;    /* tid -> CPU clock (ns), threads alive at settle_read_live() */
	struct u64map factor;  /* tid -> factor (a double's bits) */
	struct u64map slices;  /* tid -> times put on a CPU (schedstat), read with live */
	double ended;          /* the factor of threads not alive at the end */
};

void settle_init(struct settle *st);
void settle_release(struct settle *st);

/* A sample of tid weighing ns. */
void settle_add(struct settle *st, uint32_t tid, uint64_t ns);

/* What tid's samples weigh so far (0: none). */
uint64_t settle_weight(const struct settle *st, uint32_t tid);

/*
 * Read every live thread of pid and its CPU clock (schedstat) into m, and
 * the times it was put on a CPU into slices (unless NULL).
 */
void settle_read_clocks(pid_t pid, struct u64map *m, struct u64map *slices);

/* Which threads of pid are alive now, and their clocks (st->live, st->slices). */
void settle_read_live(struct settle *st, pid_t pid);

/*
 * The same for the threads with samples only (those still alive); returns
 * the CPU they used since cpu0's clocks (0 for a thread not in cpu0: all
 * of its clock). When the process clock shows no more than that, the
 * threads without samples used none, and reading each (3000 idle threads:
 * 3000 files) can be skipped.
 */
uint64_t settle_read_sampled(struct settle *st, pid_t pid, const struct u64map *cpu0);

/* What the samples of threads not alive weigh together. */
uint64_t settle_ended_weight(const struct settle *st);

/* Give tid's samples factor f. */
void settle_set(struct settle *st, uint32_t tid, double f);

/* Multiply value vi of every sample with a tid label by its thread's factor. */
void settle_apply(struct settle *st, struct profile *prof, unsigned vi);

#endif
