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
 * the thread runs on waking, and an event loop's handler read high. A
 * thread's slices (the third field of schedstat: times put on a CPU)
 * times this cost is the estimate of that CPU, shown under
 * WAITCOST_FRAME and taken from the thread's samples (never more than the
 * CPU the thread used).
 *
 * A sleep that its own timer ends costs more (arming the timer, its
 * expiry): measured too, by the same thread sleeping 128 times for 20 us.
 * Where that extra runs with interrupts off (a PVM guest, where it is
 * several times the futex's cost) no sampler sees it either; where it
 * does not, it is sampled where it runs. Each sampler bounds its use
 * (waitcost_mix, and perf's CPU the clock shows beyond the samples).
 *
 * Invariants:
 *  - measured once per process, on the first call (two helper threads on
 *    the caller's CPU, at nice -10 where allowed, one woken 128 times by
 *    the other, every 20 us, then 128 timer sleeps: 8-40 ms of wall time,
 *    a few ms of CPU; the caller's own affinity is left alone); past 100
 *    ms of wall time for each part (a saturated host) the rounds done so
 *    far, at least 8, stand; later calls return the same values;
 *    thread-safe;
 *  - the futex's value is the lower quartile of its rounds (up to 32 of 4
 *    waits), so a preempted round does not count; the timer's is its
 *    least round, and at least the futex's; both capped at 50 us; 0 when it cannot be measured (no thread, no
 *    clock): then no estimate is made.
 */
#include <stdint.h>

#define WAITCOST_FRAME "[kernel: switching the thread in and out]"

/*
 * Start the measurement on a thread of its own, so that it overlaps what
 * the caller does before it needs the figures (opening the target's
 * objects): waitcost_ns() then waits for it to end. Idempotent; without
 * a thread the first waitcost_ns() measures, as before.
 */
void waitcost_start(void);

/*
 * Without waiting: 1 and both figures (waitcost_ns(), waitcost_timer_ns())
 * once measured, else 0. After waitcost_start() it turns 1 within the
 * measurement's deadlines; without it, only after a waitcost_ns().
 */
int waitcost_ready(uint64_t *cost_ns, uint64_t *timer_ns);

/* CPU ns one wait-and-wake costs a thread here, woken by another (0: unknown). */
uint64_t waitcost_ns(void);

/*
 * CPU ns one sleep costs a thread here, woken by its own timer (measured
 * with waitcost_ns(); at least that; 0: unknown).
 */
uint64_t waitcost_timer_ns(void);

/*
 * One wait's cost for a thread found asleep asleep times, timed of them
 * in a sleep its timer ends (nanosleep): cost_ns, plus the timer's extra
 * (timer_ns - cost_ns) in that proportion. A thread never found asleep
 * is charged cost_ns.
 */
uint64_t waitcost_mix(uint64_t cost_ns, uint64_t timer_ns, uint64_t timed, uint64_t asleep);

/*
 * The part of used (ns of one thread's CPU) that slices waits account for
 * at cost ns each: slices * cost, at most used.
 */
uint64_t waitcost_of(uint64_t slices, uint64_t cost, uint64_t used);

#endif
