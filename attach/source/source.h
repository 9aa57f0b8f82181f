#ifndef CPROF_CAPTURE_H
#define CPROF_CAPTURE_H
/*
 * capture — one capture, end to end, from whichever source the profile
 * type reads. For ptrace: start the tracer thread, unwind and record its
 * snapshots as they arrive (so memory stays bounded and the target is
 * detached as soon as sampling ends), and hand back the profile.
 *
 * Invariants:
 *  - the target is detached (the tracer thread has exited) before
 *    capture_run() returns, on every path;
 *  - unwinding and symbolization happen on the calling thread, never while
 *    a target thread is stopped.
 */
#include <stdint.h>

#include "attach/source/record.h"
#include "attach/engine/sampler.h"

struct options;
struct target;
struct profile;

struct capture_report {
	/* Every source fills these. */
	uint64_t start_real_ns;    /* when the capture began, ns since the epoch */
	uint64_t duration_ns;      /* the window the profile covers */
	uint64_t samples;          /* samples taken (stacks read from the shim) */
	uint64_t threads;          /* distinct threads sampled; 0 when not applicable */
	uint64_t processes;        /* --children: processes traced (the root and descendants) */
	int gone, execed;          /* the target exited / exec'd during the capture */
	int stop_signal;           /* SIGINT/SIGTERM ended the capture early, or 0 */
	int lost_access;           /* the right to trace the target was lost mid-capture */
	double cpu_self_s;         /* cprof-attach's own CPU time */
	/* The ptrace source fills these (ptrace set). */
	int ptrace;
	struct sampler sm;
	struct record_stats rec;
	/* The shim's segment. */
	uint64_t seg_torn, seg_dropped;
};

/*
 * A capture function: capture from target t as o says into a new profile
 * (*out; the caller frees it). Returns EXIT_OK, or another EXIT_* code
 * after printing why (*out NULL).
 */
typedef int capture_fn(const struct options *o, const struct target *t, struct profile **out,
		       struct capture_report *rep);

/* Sample threads over ptrace: cpu, wall, threads. */
capture_fn capture_ptrace;

/* Read libcprof.so's segment: heap, allocs, threadcreate (attach/heap.c). */
capture_fn capture_segment;

/* cprof-attach's own CPU time so far, in seconds. */
double capture_self_cpu(void);

#endif
