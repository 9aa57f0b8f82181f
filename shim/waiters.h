#ifndef CPROF_SHIM_WAITERS_H
#define CPROF_SHIM_WAITERS_H
/*
 * waiters — which locks have threads waiting for them right now, since
 * when, and who was the last to release them: what the mutex profile needs
 * to charge a contended lock's waiting to the thread that released it. A
 * direct-mapped table keyed by lock address, touched only on contended
 * paths; the unlock of a lock nobody waits for reads one word of it.
 *
 * Why a side table, not glibc's lock word: the unlocker must know the
 * waiters' start times, which glibc does not keep, and reading
 * __data.__lock (2 = "may have waiters") would work for normal mutexes
 * only (not for rwlocks, PI, robust or elided ones) and tie the shim to
 * glibc's private layout. The table costs the uncontended unlock a hash,
 * one load of a word that only contended waits write and a branch, after
 * which the real unlock is a tail call. Measured (bench/locks, doc/locks.md): an
 * uncontended lock/unlock pair under the shim 25.4 ns, glibc's own
 * trylock/unlock pair 26.1 ns, its lock/unlock pair 23.8 ns: the shim's
 * lock is a trylock, and the rest, this load included, is lost in the
 * noise of a nanosecond or two; a look at the lock word could not be
 * cheaper than one load either.
 *
 * How delay is apportioned: each release of a lock that has waiters is
 * charged the time its current waiters waited since the later of their
 * arrival and the previous release: with k threads waiting through a
 * holder's critical section of t ns, that holder's release is charged
 * ~k * t. A waiter's remaining time, from the last release to the moment
 * it leaves (its wake-up), goes to that last release. So every waiter's
 * whole wait is charged exactly once, split among the releases that
 * happened while it waited: the holders whose critical sections made it
 * wait, in proportion to how long each made it wait.
 *
 * Invariants:
 *  - waiters_keys[i] is the address of the lock that owns slot i, or 0;
 *    it is written only under slot i's leaf lock (a spinlock as in
 *    shim/lock.h, see waiters.c), when a
 *    first waiter claims the slot or the last one leaves. A lock whose
 *    slot belongs to another lock is not followed (the caller counts it);
 *  - a waiter enters (waiters_enter) before it calls the real blocking
 *    function and leaves (waiters_leave) after it returns; a releaser
 *    tests waiters_may_wait(lock) and, if so, calls waiters_release
 *    *before* the real unlock, so that the charge is fixed while it still
 *    holds the lock: charged after the unlock, a releaser preempted right
 *    after waking a waiter (common when CPUs are few) was charged after
 *    that waiter's own release, which then took the holder's share. A
 *    waiter whose key store the releaser's test does not see yet is one
 *    that started waiting within nanoseconds of the release: its (short)
 *    wait is its remainder, charged to that release;
 *  - every time is read under the slot's lock, so the releaser's "now" is
 *    never earlier than a registered waiter's start: charges are >= 0,
 *    and the charges of all releases plus all remainders add up to the
 *    waits, exactly;
 *  - a slot's record of its last release (bucket and weight) is set by
 *    waiters_settle only if no later release came meanwhile; a remainder
 *    that meets a release still being recorded (its stack is captured
 *    after the real unlock) is carried for that release's settle, unless
 *    two releases of the lock are being recorded at once, when the later
 *    one's are dropped;
 *  - fork: a slot and its leaf lock belong to an epoch, and a fork child
 *    starts a new one, so whatever the parent's threads held or
 *    registered is free in the child the first time it is touched (a key
 *    left over may send one unlock to the slow path, which empties it);
 *  - nothing here allocates or calls outside this file but the clock
 *    (waiters_clock) and sched_yield; no dependency on other shim files.
 */
#include <stdint.h>

#define WAITERS_LOG2 13
#define WAITERS_SLOTS (1u << WAITERS_LOG2)
#define WAITERS_PENDING (-2) /* the last release is being recorded */

extern uintptr_t waiters_keys[WAITERS_SLOTS] __attribute__((visibility("hidden")));

/* The clock every time here is read from (ns): CLOCK_MONOTONIC; tests replace it. */
extern uint64_t (*waiters_clock)(void) __attribute__((visibility("hidden")));

static inline uint32_t waiters_slot(const void *lock)
{
	return (uint32_t)((((uintptr_t)lock >> 3) * 0x9E3779B97F4A7C15ull) >> (64 - WAITERS_LOG2));
}

/* Before a release: 1 when threads may be waiting for lock (one load and a compare). */
static inline int waiters_may_wait(const void *lock)
{
	return __atomic_load_n(&waiters_keys[waiters_slot(lock)], __ATOMIC_RELAXED) ==
	       (uintptr_t)lock;
}

/*
 * A thread is about to wait for lock: *t0 is now, the start of its wait.
 * 0 when it is registered; -1 when lock's slot belongs to another lock
 * (not registered, *t0 set all the same).
 */
int waiters_enter(const void *lock, uint64_t *t0);

/* What a leaving waiter's remainder is charged to. */
struct waiters_tail {
	int32_t bucket;  /* the last release's bucket, or -1: nothing to charge */
	uint32_t weight; /* that release's weight (the mutex fraction) */
	uint64_t ns;     /* the remainder: from the later of t0 and the last release to now */
};

/*
 * A registered waiter (waiters_enter returned 0 with t0) leaves, having
 * got the lock or given up. Returns now; fills *tail.
 */
uint64_t waiters_leave(const void *lock, uint64_t t0, struct waiters_tail *tail);

/* What a release is charged. */
struct waiters_charge {
	uint64_t delay;  /* ns its waiters waited since their arrival or the previous release */
	uint32_t nwait;  /* how many were waiting */
	uint32_t gen;    /* this release's number, for waiters_settle */
	int record;      /* the caller must record it (and call waiters_settle) */
	int by_size;     /* ... because delay >= keep_ns, whatever its draw */
};

/*
 * lock is about to be released (and waiters_may_wait said so): fills *c and returns
 * 1 when threads were waiting, else 0. The release is to be recorded
 * (c->record) when draw says so, or when its delay is keep_ns or more
 * (c->by_size; keep_ns 0: never by size), so that the few releases that
 * carry most of a loaded machine's waiting are each counted once rather
 * than drawn 1 in N. A recorded release's caller must call waiters_settle;
 * the remainders of an unrecorded one's waiters are dropped, as it is.
 */
int waiters_release(const void *lock, int draw, uint64_t keep_ns, struct waiters_charge *c);

/*
 * The recorded release gen of lock went to bucket (or -1) with weight.
 * Returns the remainders of waiters that left while it was being
 * recorded (ns), for the caller to add to that bucket.
 */
uint64_t waiters_settle(const void *lock, uint32_t gen, int32_t bucket, uint32_t weight);

/* Slots owned now (tests). */
uint32_t waiters_owned(void);

/* In a fork child: the parent's waiters are not here; every slot free. One store. */
void waiters_fork_child(void);

#endif
