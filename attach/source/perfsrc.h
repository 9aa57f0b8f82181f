#ifndef CPROF_SOURCE_PERF_H
#define CPROF_SOURCE_PERF_H
/*
 * perfsrc — the perf source's entry for a caller that has already asked what
 * the kernel allows (auto.c), so that a refusal can be turned into a
 * choice instead of an error.
 *
 * Invariants:
 *  - a refusal (*refused set) prints nothing and leaves its reason in
 *    rep->sampler_why; every other failure is printed as source.h says.
 */
#include "attach/source/source.h"

struct perf_access;

/*
 * Capture q with perf events in the scope a allows (source.h's capture_fn
 * otherwise). *refused is set when the kernel refused the events (or a
 * allows none): EXIT_ATTACH is returned then.
 */
int perf_capture(const struct capture_req *q, const struct perf_access *a, int *refused,
		 struct profile **out, struct capture_report *rep);

#endif
