#ifndef CPROF_SESSION_H
#define CPROF_SESSION_H
/*
 * session — the ptrace session with one target process.
 *
 * Invariants:
 *  - one thread, the tracer, makes every ptrace call and every wait; when
 *    that thread exits the kernel detaches every tracee without waking it,
 *    which is how a session ends (and why a SIGKILLed attacher leaves the
 *    target running: its exit does the same). There is no explicit detach,
 *    because PTRACE_DETACH needs a stopped tracee and stopping a thread
 *    that sleeps in epoll_wait makes the call fail with EINTR;
 *  - threads are PTRACE_SEIZEd (never SIGSTOPped) with TRACECLONE, so new
 *    threads are traced from birth; /proc/PID/task is re-read as well;
 *  - a thread is stopped only by session_sample(), only when it is running
 *    (on a CPU or runnable), and only while its registers and stack bytes
 *    are copied; a thread asleep in a syscall is read without stopping it;
 *  - if a thread enters a syscall in the instant between the check and the
 *    stop, and the syscall returns EINTR because of our stop, the return is
 *    turned into the kernel's own "restart unless a handler ran"
 *    (-ERESTARTNOHAND), so the program never sees an EINTR we caused;
 *  - every other stop (signal delivery, group stop, clone, exec, a late
 *    interrupt) is answered at once: signals are re-injected, group stops
 *    are kept with PTRACE_LISTEN.
 */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/hints.h"
#include "attach/snapshot.h"
#include "attach/threads.h"

#define SESSION_STOP_TIMEOUT_MS 50
#define SESSION_PAUSE_BUCKETS 20000 /* 1 us each: pauses up to 20 ms */

struct session_stats {
	uint64_t stops;            /* threads stopped for a sample */
	uint64_t blocked_reads;    /* threads read without stopping */
	uint64_t repeats;          /* threads found exactly as last read */
	uint64_t stop_timeouts;    /* a stop did not come in time */
	uint64_t eintr_fixed;      /* EINTRs of ours turned into restarts */
	uint64_t signals_passed;   /* signals re-injected */
	uint64_t threads_seen;
	uint64_t pause_ns_max;
	uint64_t pause_ns_sum;
	uint32_t pause_hist[SESSION_PAUSE_BUCKETS + 1]; /* last: overflow */
};

struct session {
	pid_t pid;
	struct threads threads;
	int sigfd;                /* signalfd: SIGCHLD, SIGINT, SIGTERM, SIGHUP */
	size_t stack_cap;
	struct stack_hints *hints; /* per-thread copy sizes, or NULL: always stack_cap */
	int gone;                 /* every thread has exited */
	int execed;               /* the target replaced its program */
	int stop_signal;          /* SIGINT/SIGTERM/SIGHUP received, or 0 */
	int want_state;           /* fill snapshot.state (costs a read of stat) */
	int sigchld;              /* a SIGCHLD was read: waitpid(-1) has work */
	struct session_stats stats;
};

/*
 * Prepare a session for pid (a process id, not a thread id); the calling
 * thread becomes the tracer. Blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP in
 * the calling thread (the caller blocks them in every other thread first).
 * 0 or -1 (message printed).
 */
int session_init(struct session *s, pid_t pid, size_t stack_cap);

/* Free the session's memory and descriptors (tracees stay attached until the tracer exits). */
void session_release(struct session *s);

/*
 * Seize every thread of the target, re-reading /proc/PID/task until a pass
 * finds no new one. 0, or -1 with a message naming the cause.
 */
int session_seize(struct session *s);

/* Re-read /proc/PID/task and seize threads we do not know; 0 or -1. */
int session_rescan(struct session *s);

/* Handle every pending wait status and signal; never blocks. */
void session_poll(struct session *s);

/*
 * Called with each snapshot a batch takes, right after the thread was
 * resumed (or read without stopping). t is the thread, still valid. The
 * callee owns snap.
 */
typedef void session_emit_fn(void *ctx, struct thread *t, struct snapshot *snap);

/*
 * Sample the threads in tids: every running one is asked to stop at once
 * (PTRACE_INTERRUPT to all, then each is copied and resumed as its stop
 * arrives, so the batch waits for the slowest thread, not the sum of all),
 * and, unless running_only, every sleeping one is read without a stop.
 * Other stops arriving meanwhile are answered as usual. A thread whose
 * stop does not come within SESSION_STOP_TIMEOUT_MS is skipped (its late
 * stop is answered by session_poll()).
 */
void session_sample(struct session *s, const pid_t *tids, uint32_t n, int running_only,
		    session_emit_fn *emit, void *ctx);

/* Pause percentile (0..100) in ns from the histogram. */
uint64_t session_pause_percentile(const struct session *s, double pct);

#endif
