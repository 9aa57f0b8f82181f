#ifndef CPROF_SHIM_CLOCK_H
#define CPROF_SHIM_CLOCK_H
/*
 * clock — the shim's one clock: CLOCK_MONOTONIC in nanoseconds, the clock
 * cprof-attach compares label changes, waits and fork hand-overs with.
 *
 * Invariants:
 *  - a vDSO call: no system call, no lock, no allocation, safe anywhere
 *    the shim runs (inside malloc, a lock wrapper, a fork handler);
 *  - 0 means "no time": clock_gettime failed (it does not on Linux, but
 *    callers that wait on it must not spin on a stopped clock).
 */
#include <stdint.h>
#include <time.h>

static inline uint64_t shim_mono_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
