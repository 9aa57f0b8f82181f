#ifndef CPROF_RESCUE_H
#define CPROF_RESCUE_H
/*
 * rescue — the one deadlock the kernel allows between a tracer and a
 * target that execs. The exec holds the target's cred_guard_mutex while
 * it waits for its other threads to die; a thread that dies while we hold
 * it seized stays a zombie until its tracer reaps it; and PTRACE_SEIZE of
 * any thread of the process waits for that mutex, with our stop signals
 * blocked. If the tracer thread seizes then, each waits for the other
 * (seen in CI: a sanitizer build, an exec during a 1000 Hz capture, stuck
 * until killed). A second thread of ours watches the tracer: a seize that
 * has waited longer than RESCUE_STUCK_NS makes it reap the target's
 * zombie threads, which any thread of the tracer's process may do; the
 * exec then goes on, releases the mutex, and the seize returns.
 *
 * Invariants:
 *  - only zombies are reaped here: a zombie's one status is its exit,
 *    which the tracer would only have used to drop the thread, so taking
 *    it costs the tracer nothing but an ECHILD it treats as "gone";
 *  - the watcher wakes every RESCUE_POLL_NS while it runs and does
 *    nothing else unless a seize is stuck; rescue_stop() wakes it at once
 *    and joins it (a capture's end never waits out the watcher's sleep:
 *    a plain sleep there cost a snapshot up to 20 ms, 10 on average).
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#define RESCUE_POLL_NS 20000000ull  /* the watcher looks this often */
#define RESCUE_STUCK_NS 20000000ull /* a seize waits this long before it is rescued (it takes us) */

struct rescue {
	pid_t pid;                 /* the target process */
	pthread_t thread;
	int started;
	pthread_mutex_t lock;      /* guards stop; the watcher sleeps on wake */
	pthread_cond_t wake;
	int stop;                  /* asks the watcher to end */
	uint64_t seize_since;      /* atomic: when the tracer entered PTRACE_SEIZE; 0: not in one */
	uint64_t reaped;           /* atomic: zombies reaped for the tracer */
};

/* Start watching the tracer of pid (the calling thread). 0, or -1 (then nothing watches). */
int rescue_start(struct rescue *r, pid_t pid);

/* Stop the watcher and join it. Safe when rescue_start() failed or never ran. */
void rescue_stop(struct rescue *r);

/* The tracer is about to seize (enter) or has seized (leave). */
void rescue_enter(struct rescue *r);
void rescue_leave(struct rescue *r);

#endif
