#ifndef CPROF_FAMILY_H
#define CPROF_FAMILY_H
/*
 * family — the extra tracer threads of a --children capture: one sampler
 * (and so one tracer thread, one ptrace session) per descendant process,
 * all feeding the root's queue, all ending with it.
 *
 * Invariants:
 *  - a member is started at most once per pid, and only before the
 *    capture's deadline and while nothing asked the capture to stop;
 *  - each member registers as a producer of the queue before its thread
 *    starts, so the queue closes only after the last member's last push;
 *  - family_join() returns only when every member's thread has exited:
 *    then nothing of theirs is traced any more;
 *  - at most CHILDREN_MAX members.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/source/children.h"
#include "attach/ptrace/sampler.h"

struct family_member {
	struct sampler sm;
	char comm[16];
	pthread_t thread;
};

struct family {
	pid_t root;
	const struct sampler_cfg *proto; /* the root's settings, copied for each member */
	uint64_t deadline_ns;        /* monotonic: when the capture ends */
	int *stop_all;
	struct family_member *m[CHILDREN_MAX];
	int n;
	uint64_t attach_failures;    /* descendants that could not be traced */
};

/* An empty family for root's capture; proto is the root's sampler settings. */
void family_init(struct family *f, pid_t root, const struct sampler_cfg *proto, uint64_t deadline_ns,
		 int *stop_all);

/* Start a tracer for every descendant of root not yet traced. Returns how many started. */
int family_adopt(struct family *f);

/* Wait for every member's thread; add up their results. */
void family_join(struct family *f);

/* Free the members (after family_join()). */
void family_release(struct family *f);

#endif
