#ifndef CPROF_SHIM_LOCKPROF_H
#define CPROF_SHIM_LOCKPROF_H
/*
 * lockprof — what the interposed lock functions (shim/locks.c) record on
 * their slow paths: block events (a wait, at the waiter's stack) and
 * mutex events (a contended release, at the releaser's stack), into
 * SEG_KIND_BLOCK and SEG_KIND_MUTEX buckets of the segment.
 *
 * Invariants:
 *  - called only once a thread is about to wait, or around a release that
 *    waiters_may_wait() flagged: never on an uncontended path;
 *  - every function returns at once when shim_tls.busy > 0 (the shim is
 *    at work on this thread: a signal handler, the unwinder's own lock)
 *    or the shim is not READY, and raises busy while it works, so nothing
 *    it calls re-enters it; it never locks anything but the shim's leaf
 *    locks and never allocates; the stack is captured with stack_capture
 *    (no lock, no allocation);
 *  - lockprof_block_rate and lockprof_mutex_fraction are set once, by the
 *    constructor, before which both are 0 (nothing recorded);
 *  - errno is preserved.
 */
#include <stdint.h>

#include "shim/shim.h"

extern uint64_t lockprof_block_rate SHIM_HIDDEN;     /* CPROF_BLOCK_RATE, ns; 0 off */
extern uint64_t lockprof_mutex_fraction SHIM_HIDDEN; /* CPROF_MUTEX_FRACTION; 0 off */

/* One wait, as the waiter handles it. */
struct lockprof_wait {
	uint64_t t0;   /* when it began (ns, CLOCK_MONOTONIC) */
	int followed;  /* registered in the side table (shim/waiters.h) */
	int on;        /* anything to record at all */
	uint32_t prim; /* what it waits on: SEG_PRIM_* (segment.h) */
};

/*
 * A thread is about to wait for lock (NULL: not a lock the mutex profile
 * follows: a condition variable, a semaphore, a join). Reads the clock
 * and, for a lock with the mutex profile on, registers the waiter.
 */
void lockprof_enter(const void *lock, uint32_t prim, struct lockprof_wait *w) SHIM_HIDDEN;

/*
 * The wait of lockprof_enter ended; counted: it is a wait of the block
 * profile (the lock was got, or a timed wait timed out, or a semaphore
 * wait was interrupted), not an error that returned at once.
 */
void lockprof_leave(const void *lock, struct lockprof_wait *w, int counted) SHIM_HIDDEN;

/* A release of a lock with waiters, between its two halves. */
struct lockprof_release {
	int on;     /* lockprof_release_begin charged it */
	int record; /* and it is recorded: drawn 1 in N, or kept for its size */
	uint32_t weight; /* N, or 1 when kept for its size (contend.h) */
	uint32_t gen;
	uint64_t delay;
};

/*
 * lock is about to be released and waiters_may_wait(lock) said threads
 * may wait: charges its waiters' delay to this release, now, while the
 * caller still holds it. Cheap (the side table's slot, a clock read).
 */
void lockprof_release_begin(const void *lock, struct lockprof_release *r) SHIM_HIDDEN;

/*
 * After the real release (ok: it succeeded): records the release, when
 * lockprof_release_begin chose it (contend.h), at the caller's stack. The stack capture
 * happens here, outside the caller's critical section.
 */
void lockprof_release_end(const void *lock, struct lockprof_release *r, int ok) SHIM_HIDDEN;

#endif
