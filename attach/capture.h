#ifndef CPROF_CAPTURE_H
#define CPROF_CAPTURE_H
/*
 * capture — one capture, end to end: start the tracer thread, unwind and
 * record its snapshots as they arrive (so memory stays bounded and the
 * target is detached as soon as sampling ends), and hand back the profile.
 *
 * Invariants:
 *  - the target is detached (the tracer thread has exited) before
 *    capture_run() returns, on every path;
 *  - unwinding and symbolization happen on the calling thread, never while
 *    a target thread is stopped.
 */
#include <stdint.h>

#include "attach/record.h"
#include "attach/sampler.h"

struct options;
struct target;
struct profile;

struct capture_report {
	struct sampler sm;         /* the tracer's results */
	struct record_stats rec;   /* the recorder's counters */
	uint64_t threads_sampled;  /* distinct threads with a sample */
	double cpu_self_s;         /* cprof-attach's own CPU time */
};

/*
 * Capture from target t as o says into a new profile (*out; the caller
 * frees it). Returns 0, or -1 when attaching failed (message printed,
 * *out NULL).
 */
int capture_run(const struct options *o, const struct target *t, struct profile **out,
		struct capture_report *rep);

#endif
