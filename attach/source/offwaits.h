#ifndef CPROF_SOURCE_OFFWAITS_H
#define CPROF_SOURCE_OFFWAITS_H
/*
 * offwaits — the off-CPU profile's bookkeeping: from the kernel's switch
 * and wake-up records, each thread's waits, from the instant it left a
 * CPU to the instant it came back, with the stack it left with, why it
 * left, and who woke it. Pure logic over events the off-CPU source
 * (offcpusrc.c) reads from the rings: no system call, so that the unit
 * tests drive it.
 *
 * Records come from several rings, each in time order but not with each
 * other: events are queued, and offwaits_run(upto) handles, in time
 * order, only those at or before upto (a time by which every ring had
 * been read), keeping the rest for the next call.
 *
 * Invariants:
 *  - every wait is emitted once: when its thread comes back on a CPU, or
 *    at offwaits_end() for a wait still going on; its weight is the time
 *    off the CPU, never less than 0, never more than the window;
 *  - a wait's stack is the switch-out sample taken after the thread's
 *    last switch-in; a wait whose sample was lost (a full ring, the
 *    kernel's throttling) gets none (ids NULL), never an older one;
 *  - a waker is the last wake-up of the thread after it left the CPU;
 *  - the instants are the scheduler's, as its clocks (schedstat) count
 *    them: a wait begins at the switch-out sample (taken as the next
 *    thread is picked: the switching that follows, the profiler's own
 *    copy of the stack included, is the next thread's CPU time), and ends
 *    when the thread is picked, known from a CPU-wide sched_switch
 *    (OFFEV_PICK) or the switch-out sample of the thread it follows when
 *    that is one of the target's (the tracepoint's next_pid), else at
 *    its switch-in record;
 *  - the queue holds at most OFFWAITS_QUEUE_MAX events (the rest are
 *    counted as dropped); the thread table at most OFFWAITS_THREADS_MAX
 *    threads; stacks handed in are owned (and freed) here.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/u64map.h"

#define OFFWAITS_QUEUE_MAX (1u << 20)
#define OFFWAITS_THREADS_MAX 65536

/* Why a thread left its CPU. */
enum offwait_state {
	OFFWAIT_WAITING,   /* voluntarily; sleeping or disk wait, not told apart here */
	OFFWAIT_SLEEPING,  /* interruptible sleep (S) */
	OFFWAIT_DISK,      /* uninterruptible sleep (D): disk wait */
	OFFWAIT_PREEMPTED, /* runnable, its CPU given to another */
	OFFWAIT_STOPPED,   /* stopped or traced */
	OFFWAIT_OTHER,
	OFFWAIT_NSTATES
};

/* The state label's words for each. */
extern const char *const offwait_state_name[OFFWAIT_NSTATES];

/*
 * The sched_switch tracepoint's prev_state (the kernel's report of the
 * task's state, or TASK_REPORT_MAX when preempted) as an offwait_state.
 */
enum offwait_state offwait_state_of(uint64_t prev_state);

enum offwait_kind {
	OFFEV_SAMPLE, /* a switch-out sample: the stack (and, from a tracepoint, the state) */
	OFFEV_OUT,    /* the thread left its CPU (preempt says whether runnable) */
	OFFEV_WAKE,   /* the thread was woken (by wpid/wtid, named waker) */
	OFFEV_IN,     /* the thread came back on a CPU */
	OFFEV_PICK,   /* the thread was picked to run (a CPU-wide sched_switch's next_pid) */
};

struct offwait_ev {
	uint64_t time;
	uint32_t tid;
	uint8_t kind;         /* enum offwait_kind */
	uint8_t preempt;      /* OFFEV_OUT */
	int8_t state;         /* OFFEV_SAMPLE: an offwait_state from the tracepoint, or -1 */
	uint32_t next_tid;    /* OFFEV_SAMPLE: the thread picked to run next (tracepoint), or 0 */
	uint64_t *ids;        /* OFFEV_SAMPLE, OFFEV_WAKE: a stack (malloc'd, handed over), or NULL */
	uint32_t nids;
	uint32_t wpid, wtid;  /* OFFEV_WAKE: the waker (0: not a thread) */
	const char *waker;    /* OFFEV_WAKE: its name, living as long as the offwaits */
};

/* One wait, as emitted. */
struct offwait {
	uint32_t tid;
	enum offwait_state state;
	uint64_t ns;                 /* off the CPU */
	int before;                  /* begun before the window: ns counts from its start */
	const uint64_t *ids;         /* its stack, or NULL (lost, or a wait begun before) */
	uint32_t nids;
	const char *waker;           /* NULL: no wake-up seen */
	uint32_t wpid, wtid;
	const uint64_t *wids;        /* the waker's stack, or NULL */
	uint32_t nwids;
};

typedef void offwait_emit_fn(void *ctx, const struct offwait *w);

struct offwaits_stats {
	uint64_t events, dropped;    /* events queued / dropped (queue full) */
	uint64_t waits;              /* waits emitted */
	uint64_t waits_ns;           /* their total */
	uint64_t no_stack;           /* waits whose switch-out sample was lost */
	uint64_t at_switch_in;       /* waits ended at a switch-in record: no pick seen */
	uint64_t before;             /* waits begun before the window */
	uint64_t woken;              /* waits with a waker */
	uint64_t threads_over;       /* threads past OFFWAITS_THREADS_MAX, not followed */
};

struct offthr;

struct offwaits {
	uint64_t t0;                 /* the window's start */
	offwait_emit_fn *emit;
	void *ctx;
	struct offwait_ev *q;        /* the queue */
	size_t nq, capq;
	struct u64map idx;           /* tid -> 1 + index in thr[] */
	struct offthr *thr;
	size_t nthr, capthr;
	struct offwaits_stats st;
};

void offwaits_init(struct offwaits *w, uint64_t t0, offwait_emit_fn *emit, void *ctx);
void offwaits_release(struct offwaits *w);

/*
 * tid was there when the window began, in state (as /proc said then): its
 * first switch-in ends a wait begun before the window (struct offwait's
 * before), whose stack is ids[0..nids) when the caller could read it
 * then (handed over; NULL: none). A thread never switched during the
 * window is the caller's (offwaits_seen()).
 */
void offwaits_present(struct offwaits *w, uint32_t tid, enum offwait_state state, uint64_t *ids,
		      uint32_t nids);

/*
 * The window begins at t0 (after the present threads were read): their
 * waits begun before count from there.
 */
void offwaits_start(struct offwaits *w, uint64_t t0);

/* Queue ev (its stack is owned here from now on, queued or not). */
void offwaits_push(struct offwaits *w, const struct offwait_ev *ev);

/* Handle the queued events at or before upto, in time order. */
void offwaits_run(struct offwaits *w, uint64_t upto);

/*
 * The window ended at t1: handle every queued event, and emit each wait
 * still going on as lasting until t1.
 */
void offwaits_end(struct offwaits *w, uint64_t t1);

/*
 * tid, there at the start and never switched during the window, was off
 * the CPU for ns of it: its wait is emitted with what offwaits_present()
 * gave (state, stack). 0, or -1 when tid is not such a thread.
 */
int offwaits_unswitched(struct offwaits *w, uint32_t tid, uint64_t ns);

/* Whether tid had any switch during the window. */
int offwaits_seen(const struct offwaits *w, uint32_t tid);

#endif
