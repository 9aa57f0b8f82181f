#ifndef CPROF_SESSION_H
#define CPROF_SESSION_H
/*
 * session — cprof-attach's relation with one target process: which threads
 * it has, and how one of them is sampled. Two files, one way: session.c
 * (start, thread list, release) and stopcopy.c (sampling, polling), which
 * uses the first and is never called by it; stackcopy.c copies stacks.
 *
 * Invariants:
 *  - a thread is traced only while it is sampled: PTRACE_SEIZE, then
 *    PTRACE_INTERRUPT, its registers and stack bytes copied, PTRACE_DETACH.
 *    Between samples nothing is traced, so the target's signals, clones and
 *    execs never pass through cprof-attach and never wait for it;
 *  - only a running thread (on a CPU or runnable) is ever stopped; a thread
 *    asleep in a syscall is read from /proc/PID/task/TID/syscall and
 *    process_vm_readv without stopping it, because stopping it would make
 *    calls such as epoll_wait fail with EINTR;
 *  - if a thread enters a syscall in the instant between the check and the
 *    stop, and the syscall returns EINTR because of our stop, the return is
 *    turned into the kernel's own "restart unless a handler ran"
 *    (-ERESTARTNOHAND) before the thread goes on, so the program never sees
 *    an EINTR we caused;
 *  - one thread (the tracer) makes every ptrace call and every wait; when
 *    it exits the kernel detaches anything still seized without waking it,
 *    so a SIGKILLed cprof-attach never leaves a thread stopped;
 *  - threads come from /proc/PID/task, re-read when the sampler asks; a
 *    thread that vanished is dropped from the table.
 */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/ptrace/hints.h"
#include "attach/ptrace/rescue.h"
#include "attach/ptrace/snapshot.h"
#include "attach/ptrace/threads.h"

#define SESSION_STOP_TIMEOUT_MS 50
#define SESSION_DEFER_US 250 /* a thread on a CPU stops in ~20-100 us; later, it waits for one */
#define SESSION_PAUSE_BUCKETS 20000 /* 1 us each: pauses up to 20 ms */
/*
 * A one-pass snapshot waits this long in all for the stops of running
 * threads that wait for a CPU. On MariaDB under 50 busy connections on 2
 * CPUs, 7 of 63 threads did not stop within SESSION_STOP_TIMEOUT_MS each
 * and were reported as not captured; eu-stack, waiting for all, took 60 s.
 */
#define SESSION_STRAGGLER_MS 2000

/*
 * Called with each snapshot a batch takes, right after the thread was
 * released (or read without stopping). t is the thread, still valid. The
 * callee owns snap.
 */
typedef void session_emit_fn(void *ctx, struct thread *t, struct snapshot *snap);

struct session_stats {
	uint64_t stops;            /* threads stopped for a sample */
	uint64_t deferred;         /* ... of which waited for a CPU: copied when they next ran */
	uint64_t blocked_reads;    /* threads read without stopping */
	uint64_t torn_reads;       /* ... read again: they woke during the copy */
	uint64_t torn_stops;       /* ... stopped after three such reads in a row */
	uint64_t repeats;          /* threads found exactly as last read */
	uint64_t stop_timeouts;    /* a stop did not come in time */
	uint64_t seize_failures;   /* PTRACE_SEIZE refused (another tracer?) */
	uint64_t eintr_fixed;      /* EINTRs of ours turned into restarts */
	uint64_t signals_passed;   /* signals that arrived during a stop, passed on */
	uint64_t altstack_copies;  /* samples on an alternate signal stack: two stacks copied */
	uint64_t threads_seen;
	uint64_t rescans;          /* reads of /proc/PID/task */
	uint64_t exec_rescues;     /* zombies reaped by the watcher while a seize waited on an exec */
	uint64_t user_stops;       /* cpu: stops in user code, their clock read... */
	uint64_t user_stops_late;  /* ... after it ran on past KICK_LATE_NS: the kick waited */
	uint64_t slid;             /* cpu: stops that slid to a later system call (snapshot.slid) */
	uint64_t kstacks;          /* sleeping threads read with their kernel stack */
	uint64_t kstack_refused;   /* 1: the kernel would not give kernel stacks */
	uint64_t pause_ns_max;
	uint64_t pause_ns_sum;
	uint32_t pause_hist[SESSION_PAUSE_BUCKETS + 1]; /* last: overflow */
};

struct session {
	pid_t pid;
	struct threads threads;
	int sigfd;                /* signalfd: SIGCHLD, and SIGINT, SIGTERM, SIGHUP without a watchdog */
	int pidfd;                /* readable when the process exits; -1 if unsupported */
	int wakefd;               /* readable when another tracer read a SIGCHLD (chldwake.h) */
	int wakeslot;             /* ... our slot there, or -1 */
	size_t stack_cap;
	struct stack_hints *hints; /* per-thread copy sizes, or NULL: always stack_cap */
	uint64_t restorer;        /* a signal frame's return address found to be rt_sigreturn */
	int want_state;           /* fill snapshot.state (costs a read of stat) */
	/*
	 * No CPU clock read when a thread is first listed: a single pass
	 * (snapshot) weighs nothing by CPU, and those reads kept a descriptor
	 * per thread open from the start (EMFILE at 1000 threads under the
	 * usual limit of 1024, and a table grown after an RCU grace period).
	 */
	int no_baseline;
	/*
	 * Non-NULL: a running thread that does not stop within
	 * SESSION_DEFER_US is waiting for a CPU; the batch moves on, and its
	 * stop is copied and given to defer_emit when it comes (when the
	 * thread next runs). NULL: the batch waits up to
	 * SESSION_STOP_TIMEOUT_MS and reports it as not captured.
	 */
	session_emit_fn *defer_emit;
	void *defer_ctx;
	uint64_t batch_ns;        /* with defer_emit: after this long, a batch defers without waiting */
	/*
	 * Mark stops that did not find the thread running (snap->slept): it
	 * slept in a syscall, or woke only after our interrupt; and of those,
	 * the ones that waited for a CPU (snap->queued). Costs one read of
	 * schedstat before each interrupt.
	 */
	int want_look;
	int want_kstack;            /* read a sleeping thread's kernel stack (kstack.h) */
	int gone;                 /* the process has exited */
	int execed;               /* the process replaced its program */
	int stop_signal;          /* SIGINT/SIGTERM/SIGHUP received, or 0 */
	int lost;                 /* the right to trace it was lost mid-capture */
	int doubt;                /* a refusal that may mean lost rights: check them */
	uint32_t late;            /* threads seized whose stop came after their batch gave up */
	uint64_t scan_no;         /* rescan counter, to find vanished threads */
	uint64_t task_nlink;      /* /proc/PID/task's link count at the last rescan */
	uint64_t exe_ino, start_code; /* the program, to notice an exec */
	struct rescue rescue;     /* the watcher of stuck seizes (rescue.h) */
	struct session_stats stats;
};

/*
 * Prepare a session for pid (a process id, not a thread id); the calling
 * thread becomes the tracer. Blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP in
 * the calling thread (the caller blocks them in every other thread first).
 * 0 or -1 (message printed).
 */
int session_init(struct session *s, pid_t pid, size_t stack_cap);

/* Free the session's memory and descriptors. */
void session_release(struct session *s);

/*
 * Check that the target may be traced and read its threads. 0, or -1 with
 * errno (EPERM: not permitted; ESRCH: gone).
 */
int session_start(struct session *s);

/*
 * Re-read /proc/PID/task: add new threads (their CPU used so far counted
 * as theirs, since they were born after the start), drop vanished ones,
 * and notice the process's exit or exec. 0 or -1.
 */
int session_rescan(struct session *s);

/*
 * Handle signals to cprof-attach, late stops (a deferred one is copied
 * and given to defer_emit) and the process's exit;
 * settle a doubt about our rights (a thread that is exiting refuses
 * PTRACE_SEIZE too, so one refusal proves nothing). Never blocks.
 */
void session_poll(struct session *s);

/*
 * Sample the threads in tids: each running one is seized, stopped, copied
 * and detached in turn (so none waits while another is copied); unless
 * running_only, every sleeping one is read without a stop (and a thread
 * whose CPU clock has not moved since it was last read asleep is reported
 * as unchanged). A running thread whose stop does not come in time is
 * deferred (see defer_emit) or, without defer_emit, skipped after
 * SESSION_STOP_TIMEOUT_MS (and, unless running_only, reported as not
 * captured) and released when its stop comes. A stopped thread found
 * asleep inside a syscall (the stop broke its sleep) has snap->slept set.
 */
void session_sample(struct session *s, const pid_t *tids, uint32_t n, int running_only,
		    session_emit_fn *emit, void *ctx);

/*
 * Wait, at most wait_ns in all, for the stops of the threads session_sample()
 * deferred (they were waiting for a CPU): each is copied and given to
 * s->defer_emit as it comes. Those still waiting at the end are given to
 * s->defer_emit as not captured (SNAP_LOST) and released when their stop
 * comes. Returns early on a signal to us or the target's end.
 */
void session_await_deferred(struct session *s, uint64_t wait_ns);

/*
 * Report t as unchanged for count ticks, the last at time_ns (a thread
 * whose clock has not moved: it is where its last sample found it).
 */
void session_repeat(struct session *s, struct thread *t, uint32_t count, uint64_t time_ns,
		    session_emit_fn *emit, void *ctx);

/* The same, labelled state (a snapshot.state letter) rather than the last sample's. */
void session_repeat_as(struct session *s, struct thread *t, uint32_t count, uint64_t time_ns,
		       char state, session_emit_fn *emit, void *ctx);

/*
 * Whether the number of threads changed since the last rescan: one stat
 * of /proc/PID/task (its link count), where a rescan reads every entry.
 */
int session_count_changed(struct session *s);

/* Pause percentile (0..100) in ns from st's histogram. */
uint64_t session_stats_percentile(const struct session_stats *st, double pct);

/* Add from's counts and histogram to into's (a --children capture's tracers, together). */
void session_stats_add(struct session_stats *into, const struct session_stats *from);

#endif
