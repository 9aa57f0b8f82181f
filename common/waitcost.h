#ifndef CPROF_WAITCOST_H
#define CPROF_WAITCOST_H
/*
 * waitcost — what one wait costs a thread in CPU: the kernel switching it
 * out and back in (and a futex call's entry and exit), measured on this
 * machine with two threads of our own on one CPU, one waiting on a futex
 * the other wakes. Neither sampler sees it where it happens: the switch runs with
 * interrupts off, so a clock tick due there lands when interrupts are on
 * again (the CPU-wide event on whoever runs then), and a ptrace stop asked
 * for there finds the thread asleep; carried on, that CPU went to the code
 * the thread runs on waking. An event loop's handler read 3-7 points
 * high. A thread's slices (the third field of schedstat: times put on a
 * CPU) times this cost is the estimate of that CPU, shown under
 * WAITCOST_FRAME and taken from the thread's samples (never more than the
 * CPU the thread used).
 *
 * Invariants:
 *  - measured once per process, on the first call (two helper threads on
 *    the caller's CPU, one woken 128 times by the other, every 20 us: 3-8
 *    ms of wall time, under 1 ms of CPU; the caller's own affinity is
 *    left alone); later calls return the same value; thread-safe;
 *  - the value is the lower quartile of 32 rounds of 4 waits, so a
 *    preempted round does not count, capped at 50 us; 0 when it cannot be
 *    measured (no thread, no clock): then no estimate is made.
 */
#include <stdint.h>

#define WAITCOST_FRAME "[kernel: switching the thread in and out]"

/* CPU ns one wait-and-wake costs a thread here (0: unknown). */
uint64_t waitcost_ns(void);

/*
 * The part of used (ns of one thread's CPU) that slices waits account for
 * at cost ns each: slices * cost, at most used.
 */
uint64_t waitcost_of(uint64_t slices, uint64_t cost, uint64_t used);

#endif
