#ifndef CPROF_WAITCOST_H
#define CPROF_WAITCOST_H
/*
 * waitcost — what one wait costs a thread in CPU: the kernel's side of a
 * blocking call (entry, arming a timer, switching out, switching back in,
 * return), measured on this machine by timing our own thread through
 * short sleeps. Neither sampler can see most of it where it happens: the
 * switch runs with interrupts off, so a clock tick due there lands just
 * after the thread is switched in again (in the code it runs on waking),
 * and a ptrace stop there finds the thread asleep. An event loop's handler
 * was charged the thread's whole kernel side of its waits: 95-100% of its
 * thread for 92-95% measured by the thread itself. A thread's slices (the
 * third field of schedstat: times put on a CPU) times this cost is the
 * estimate of that CPU, shown under WAITCOST_FRAME and taken from the
 * thread's samples (never more than the CPU the thread used).
 *
 * Invariants:
 *  - measured once per process, on the first call (about 128 sleeps of
 *    20 us: 3-8 ms of wall time, under 1 ms of CPU); later calls return
 *    the same value; thread-safe;
 *  - the value is the median of 16 rounds of 8 sleeps, so one preempted
 *    round does not move it; 0 when the clocks cannot be read (then no
 *    estimate is made).
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
