#ifndef CPROF_HURRY_H
#define CPROF_HURRY_H
/*
 * hurry — the profiler's start at a higher priority, where allowed. On a
 * machine whose CPUs the target keeps busy, a profiler at nice 0 waits for
 * a CPU at every step of its start (16 busy threads on 2 CPUs: a second
 * from exec to the first sample, most of it spent runnable). The main
 * thread runs its start at HURRY_NICE (root, CAP_SYS_NICE) and goes back
 * to its own priority once sampling runs: what comes after (unwinding,
 * source lines, writing) must not take CPU from the target ahead of its
 * turn. It spends the same CPU, only sooner.
 *
 * Invariants:
 *  - only the calling thread's priority changes (threads it creates
 *    meanwhile inherit it: each sets its own where it matters);
 *  - hurry_end() restores what hurry_begin() found, once, and only on the
 *    thread that began; both are idempotent and thread-safe;
 *  - hurry_nice() is the priority to go back to: the one found when
 *    begun and not ended, else the calling thread's own.
 */

#define HURRY_NICE -10

/* Raise the calling thread to HURRY_NICE if it is lower and that is allowed. */
void hurry_begin(void);

/* Restore the priority hurry_begin() found (when called on that thread). */
void hurry_end(void);

/* The priority a capture returns to once its start is done. */
int hurry_nice(void);

#endif
