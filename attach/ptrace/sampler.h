#ifndef CPROF_SAMPLER_H
#define CPROF_SAMPLER_H
/*
 * sampler — the tracer thread: attach, then on every tick of the sampling
 * clock let the policy pick the threads it wants, sample them and queue
 * the snapshots; between ticks answer the target's stops at once. When the
 * thread function returns, the thread exits and the kernel detaches the
 * target (see session.h).
 *
 * A policy is what differs between the ptrace-based profile types: which
 * threads a tick samples and what a sample weighs. The clock, the
 * session and the queue are the same for all; the policies are rows in
 * policies.c, named by the kinds table.
 *
 * Invariants:
 *  - the sampler never waits for the consumer: a full queue loses samples
 *    and counts them;
 *  - a sample's weight is measured (the thread's own CPU time, or elapsed
 *    time, since its previous sample), so nothing is counted twice and
 *    nothing is lost when a tick is late;
 *  - the caller writes only cfg before the thread starts; the tracer
 *    thread writes res and the bookkeeping, which the caller reads only
 *    after pthread_join().
 */
#include <stdint.h>
#include <sys/types.h>

#include "attach/ptrace/moved.h"
#include "attach/ptrace/session.h"
#include "attach/ptrace/snapshot.h"

struct sampler;

/* Policy flags. */
#define POLICY_ONCE 1u      /* one pass over every thread at the start, weight 1; no clock */
#define POLICY_DEFER 2u     /* a stop that waits for a CPU is copied when it comes (session.defer_emit) */
#define POLICY_RUNNING 4u   /* mark stops that did not find the thread running (snapshot.slept) */
#define POLICY_EAGER 8u     /* a tick that finds the thread count changed reads the list first */
#define POLICY_WAITS 16u    /* the kernel's side of each wait is kept apart (waitcost.h, thread.wait_ns) */
#define POLICY_LOOK 32u     /* label stops running, waiting for a CPU or asleep (snapshot.queued) */

struct policy {
	const char *name;
	unsigned flags;          /* POLICY_* */
	uint64_t cold_slack_ns;  /* moved.h: unexplained CPU per running thread before a full read */
	/* This tick: choose threads of tids[0..n) (room for n in picked) and sample them. */
	void (*tick)(struct sampler *sm, struct session *s, const pid_t *tids, uint32_t n,
		     pid_t *picked);
	/* Weigh a snapshot of t and queue it (sampler_push); also given deferred stops. */
	session_emit_fn *emit;
	/* At the end, for every thread: give it what it is still owed. */
	void (*finish)(struct sampler *sm, struct session *s, struct thread *t);
	/* After every thread's finish, or NULL: settle what no thread was given. */
	void (*end)(struct sampler *sm, struct session *s);
};

/* Set by the caller before the thread starts. */
struct sampler_cfg {
	pid_t pid;
	const char *comm;
	const char *what;         /* the profile type's name, for the "profiling" note */
	const char *how;          /* appended to that note (the sampler and why), or NULL */
	const struct policy *policy;
	int want_state;           /* fill snapshot.state (the samples carry a state label) */
	int want_kstack;          /* sleeping threads' kernel stacks (kstack.h) */
	int root;                 /* the process asked for (not a --children descendant) */
	int *stop_all;            /* shared by a --children capture's tracers, or NULL */
	uint64_t period_ns;
	uint64_t duration_ns;
	size_t stack_cap;
	struct stack_hints *hints;
	int quiet;
	struct queue *queue;
	/*
	 * The source's work that must keep the target's pace (the program's
	 * labels, read before their rings wrap): called on the tracer after
	 * each tick's snapshots are queued and once at the end before the
	 * queue closes, at the tracer's priority; NULL: none.
	 */
	void (*tick_hook)(void *ctx);
	void *tick_ctx;
};

/* What a capture learns from its tracer, for the report. */
struct sampler_results {
	int attach_errno;         /* nonzero: attaching failed with it */
	int gone, execed, stop_signal;
	int lost_access;          /* the right to trace it was lost mid-capture */
	uint64_t start_real_ns, start_mono_ns, end_mono_ns;
	uint64_t samples;         /* snapshots queued */
	uint64_t lost;            /* snapshots dropped: queue full */
	uint64_t ticks, ticks_missed;
	uint64_t cpu_unattributed_ns; /* CPU of threads never found running (a marker each) */
	uint64_t cpu_process_ns;  /* cpu: the process's CPU clock over the capture */
	uint64_t cpu_short_ns;    /* cpu: CPU no thread's clock showed (short-lived threads) */
	uint64_t cpu_waits_ns;    /* cpu: the kernel's side of the threads' waits (a marker each) */
	uint64_t wait_cost_ns;    /* cpu: one wait's CPU as measured here (0: not estimated) */
	uint64_t timer_cost_ns;   /* cpu: one timer sleep's, the same */
	uint64_t weighed_ns;      /* what the queued samples weigh, together */
	int niced;                /* the tracer thread runs at a raised priority */
	uint64_t found_asleep;    /* cpu: stops that found the thread asleep (carried on) */
	uint64_t threads_read;    /* per-thread CPU clock reads (cost follows the busy ones) */
	uint64_t pause_p50_ns, pause_p99_ns;
	struct session_stats stats;
};

struct sampler {
	struct sampler_cfg cfg;
	struct sampler_results res;
	/* The tracer's bookkeeping. */
	struct moved mv;          /* which threads ran */
	uint64_t tids_generation; /* the thread table's generation the tid list holds */
	uint32_t ntids;
	uint64_t wall_generation; /* wall: the generation whose new threads were all read */
	uint64_t prev_tick_ns;    /* when the last tick's work ended */
};

/* The tracer thread's body; arg is a struct sampler whose cfg is set. */
void *sampler_main(void *arg);

/*
 * Add from's counts (a --children descendant's tracer) to into's, the
 * first process's: its clock, times and outcome stay into's own; the
 * pause percentiles are taken again over both.
 */
void sampler_results_add(struct sampler_results *into, const struct sampler_results *from);

/* Queue snap (a policy's emit does, once it is weighed); a full queue drops and counts it. */
void sampler_push(struct sampler *sm, struct snapshot *snap);

#endif
