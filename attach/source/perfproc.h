#ifndef CPROF_SOURCE_PERFPROC_H
#define CPROF_SOURCE_PERFPROC_H
/*
 * perfproc — the processes a perf capture samples: the root, and with
 * --children its descendants, each with its own memory map, recorder,
 * labels, thread names and clocks, all fed by the root's events (CPU
 * scope: one event per CPU sees every process; each sample goes to the
 * process it is of). Private to the perf source (perf.c).
 *
 * Invariants:
 *  - m[0] is the root; every member shares the family's events and the
 *    report's statistics;
 *  - a process is a member once per program: an exec during the capture
 *    ends the member running the old one at the exec's time, and a new
 *    member takes the samples from then on (the root's exec ends the
 *    capture instead);
 *  - a descendant is adopted at the start or within PERFPROC_ADOPT_NS of
 *    its birth (its samples before are passed over, and its clocks are
 *    read at adoption, so that its window is the samples'); at most
 *    CHILDREN_MAX + 1 members;
 *  - nothing here is read from the target but through recorder_new() and
 *    labelsrc_new() (their own bounds) and /proc's numbers.
 */
#include <stdint.h>
#include <sys/types.h>

#include "attach/perf/altstack.h"
#include "attach/perf/events.h"
#include "attach/perf/stackhole.h"
#include "attach/source/children.h"
#include "attach/source/record.h"
#include "attach/source/result.h"
#include "attach/source/settle.h"
#include "attach/source/tnames.h"
#include "attach/source/source.h"
#include "common/u64map.h"

#define PERFPROC_ADOPT_NS 1000000000ull /* --children: look for new descendants this often */

/*
 * One process's share of a capture: the root's, or with --children a
 * descendant's (one per program it runs: an exec starts another). The
 * events are the root's, for all.
 */
struct pfam;

struct pcap {
	const struct capture_req *q;
	struct pfam *fam;          /* the family it is a member of */
	int unready;               /* its memory map could not be read: its samples are passed over */
	pid_t pid;
	const char *comm;
	char comm_buf[16];         /* a descendant's name (comm points here) */
	struct perf_events *ev;    /* the root's */
	struct recorder *rec;
	struct altstack alt;       /* handlers' interrupted stacks */
	struct stackhole hole;     /* stacks above an untouched page */
	struct label_src *lab;     /* the program's labels */
	struct perf_stats *st;     /* the report's, shared by the family */
	unsigned labels;
	struct tnames names;       /* its threads' names */
	struct settle settle;      /* what each thread's samples weigh; the clocks at the end */
	uint64_t all_samples;      /* every sample, the target's or not */
	uint64_t exiting_ns;       /* the weight of samples of threads past their exit (no tid) */
	int execed;
	uint64_t exec_time;        /* when it exec'd (monotonic ns); 0: unknown, every later sample is the new program's */
	uint64_t exe_ino, start_code; /* the program at the start (target_exec_id) */
	struct u64map cpu0, slices0;  /* its threads' clocks when sampling began (settle.h) */
	uint64_t proc0_ns;         /* its process clock then */
	uint64_t proc_ns;          /* ... and its CPU over the window, at the end */
	uint64_t since;            /* a later program's: its exec's time (monotonic ns); 0: from the start */
	int pidfd;                 /* a descendant's: readable once it exited; -1: none */
	int scaled;                /* the totals were settled against the clocks */
	uint64_t wait_cost_ns;     /* CPU scope: one wait's CPU (waitcost.h); 0: not estimated */
	uint64_t timer_cost_ns;    /* CPU scope: one timer sleep's, the most a wait is charged */
	uint64_t jitter;           /* CPU scope: xorshift64 state for the next period; 0: none */
};

struct pfam {
	const struct capture_req *q;
	struct profile *prof;
	struct perf_events ev;
	struct perf_stats *st;
	unsigned labels;           /* the request's; with --children also pid and process */
	struct pcap *m[CHILDREN_MAX + 1];
	int n;
	uint64_t adopted_ns;       /* the last look for new descendants (monotonic) */
	uint64_t adopt_failures;   /* descendants whose memory map could not be read */
};

/* An empty family for q's capture into prof; the root is added with pfam_adopt_one(). */
void pfam_init(struct pfam *f, const struct capture_req *q, struct profile *prof,
	       struct perf_stats *st);

/*
 * Add pid as a member whose samples start at since (monotonic ns; 0: any),
 * comm its name (NULL: read now); its clocks are read now. The member, or
 * NULL with errno (the root's memory map unreadable, the family full).
 */
struct pcap *pfam_adopt_one(struct pfam *f, pid_t pid, const char *comm, uint64_t since);

/*
 * Read member c's memory map, once (a descendant's at its first sample:
 * most of a family of idle workers is never sampled). 0, or -1 with errno
 * when it cannot be read (then never again).
 */
int pcap_ready(struct pcap *c);

/* Adopt the root's descendants not yet members. Returns how many. */
int pfam_adopt(struct pfam *f);

/* The member a record of pid at time t (the kernel's clock) is of, or NULL. */
struct pcap *pfam_find(struct pfam *f, uint32_t pid, uint64_t t);

/* Whether member c's process has exited (the root's is told by the capture). */
int pfam_gone(const struct pcap *c);

/* Free every member and the events. */
void pfam_release(struct pfam *f);

#endif
