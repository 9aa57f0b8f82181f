#ifndef CPROF_PERF_ACCESS_H
#define CPROF_PERF_ACCESS_H
/*
 * perfaccess — what the kernel lets this user do with perf events, and why,
 * in words a person can act on: the scope the perf sampler may use
 * (events.h), whether kernel-mode samples are allowed, and, when a
 * perf_event_open() failed, the setting that refused it
 * (kernel.perf_event_paranoid, CAP_PERFMON, a seccomp filter, a kernel
 * without perf events, the descriptor limit).
 *
 * Invariants:
 *  - asking never fails: an unreadable setting is taken as the strictest;
 *  - a reason is one short phrase without a trailing period, fit to follow
 *    "perf events: " or "ptrace: " on the capture line.
 */
#include <stddef.h>
#include <sys/types.h>

struct perf_access {
	int scope;            /* PERF_SCOPE_CPU, PERF_SCOPE_TASK, or 0: none */
	int exclude_kernel;   /* only user-mode samples are allowed */
	int paranoid;         /* kernel.perf_event_paranoid, or 99 when unreadable */
	char why[160];        /* why this scope: "CAP_PERFMON", "perf_event_paranoid is 2"... */
};

/* What this process may do, by its capabilities and the kernel's settings. */
void perf_access_probe(struct perf_access *a);

/*
 * Why perf_event_open() (or the step named what) failed with errno e,
 * for the access a: one phrase naming the setting to change, in buf.
 */
void perf_access_refusal(const struct perf_access *a, const char *what, int e, char *buf,
			 size_t cap);

#endif
