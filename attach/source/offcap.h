#ifndef CPROF_SOURCE_OFFCAP_H
#define CPROF_SOURCE_OFFCAP_H
/*
 * offcap — the off-CPU source's state, shared by its three files and
 * nothing else: offcpusrc.c (the capture: events opened, the window, the
 * end), offread.c (the rings' records as offwaits events), offemit.c
 * (waits as samples; the threads there at the start).
 *
 * Invariants: one capture's, used by the capture's thread alone; every
 * stack handed to offwaits is malloc'd and owned by it from then on.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/perf/events.h"
#include "attach/perf/stackhole.h"
#include "attach/perf/tracefs.h"
#include "attach/source/offwaits.h"
#include "attach/source/source.h"
#include "attach/source/tnames.h"
#include "common/u64map.h"

#define FILTER_TIDS 256        /* wakers followed for at most this many threads */
#define PRESENT_MAX 65536      /* threads read at the start */

struct recorder;
struct offcpu_stats;

/* One capture's state. */
struct offcap {
	const struct capture_req *q;
	pid_t pid;
	struct recorder *rec;
	struct tnames names;
	struct offwaits w;
	struct perf_events stacks, times, wakes, picks;
	struct stackhole hole;       /* the stack above the copy, read from memory */
	int have_wakes;
	int have_picks;              /* CPU-wide sched_switch, filtered on next_pid: when picked */
	struct tracefs_field prev_state, next_pid, wakee; /* offsets in the raw data; size 0: none */
	struct u64map cpu0;          /* tid -> CPU ns at the start (schedstat) */
	struct u64map short_ns, short_n; /* tid -> waits under --min-wait, their total and count */
	struct u64map filtered;      /* tids in the wake-up and pick filters */
	int refilter;                /* a thread was born: the filter wants it */
	char wakers[64][16];         /* names of wakers in other processes ("comm"), a few */
	unsigned nwakers;
	struct offcpu_stats *st;
	uint64_t t0;
	unsigned char *copy;         /* a sleeping thread's stack, read at the start */
	int no_kstack;               /* /proc's kernel stacks refused: not asked again */
};

/* perf_record_fn handlers (ctx: the offcap) for the four sets of rings. */
void offread_switch_sample(void *ctx, const unsigned char *rec, size_t len);
void offread_switch_record(void *ctx, const unsigned char *rec, size_t len);
void offread_wake(void *ctx, const unsigned char *rec, size_t len);
void offread_pick(void *ctx, const unsigned char *rec, size_t len);

/* Give the wake-up and pick events the filter of the target's threads now (at most FILTER_TIDS). */
void offread_filter(struct offcap *o);

/* offwaits' emit: one wait a sample, or its thread's short waits' total. */
void offemit_wait(void *ctx, const struct offwait *ow);

/* The waits under --min-wait, one sample per thread. */
void offemit_shorts(struct offcap *o);

/*
 * The threads there at the start: their clocks, their state, the stack a
 * sleeping one is in (read without a stop), each a wait until its first
 * switch.
 */
void offemit_present(struct offcap *o);

/* Threads never switched during a window of window ns: the time their clock does not count. */
void offemit_unswitched(struct offcap *o, uint64_t window);

#endif
