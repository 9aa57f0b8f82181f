#ifndef CPROF_MOVED_H
#define CPROF_MOVED_H
/*
 * moved — which threads ran since the last tick, at a cost that follows
 * the running threads and not the thread count. Only "hot" threads (busy
 * within MOVED_HOT_TICKS ticks) have their CPU clock read each tick; the
 * process's CPU clock says how much CPU the per-thread clocks have not
 * explained, and the cold threads are read only when that grows (or every
 * 2 s, 2 ms per thread past 1000 threads, as a safety net). Used by the
 * cpu and wall policies.
 *
 * Invariants:
 *  - a thread's CPU is never lost, only noticed later: its clock keeps
 *    counting, and what a read finds is added to its cpu_pending;
 *  - a thread is read at most once per tick (THREAD_READ, cleared before
 *    moved_pick() returns);
 *  - CPU the process clock shows and no known thread's clock explains
 *    (beyond the slack) sets rescan_due, whether it was noticed by the hot
 *    threads or by a read of every thread: a new thread is looked for at
 *    once, not at the next periodic rescan;
 *  - at most MOVED_HOT_MAX threads are hot; the others are read with the
 *    cold ones.
 */
#include <stdint.h>
#include <sys/types.h>

#include "attach/ptrace/session.h"

#define MOVED_HOT_MAX 4096

struct moved {
	pid_t pid;
	uint64_t cold_slack_ns;   /* unexplained CPU per running thread before a full read */
	uint64_t proc_cpu;        /* the process's CPU clock at the last read */
	uint64_t proc_cpu_start;  /* ... when watching began */
	uint64_t unexplained_ns;  /* process CPU the thread clocks have not explained (cumulative) */
	uint64_t explained_at_scan; /* unexplained_ns right after the last read of every thread */
	uint64_t full_scan_ns;    /* when every thread was last read */
	pid_t hot[MOVED_HOT_MAX]; /* threads busy lately: read every tick */
	uint32_t nhot;
	uint64_t hot_generation;  /* the thread table's generation the list was built from */
	uint64_t threads_read;    /* per-thread CPU clock reads (cost follows the busy ones) */
	int rescan_due;           /* the CPU went to a thread we may not know: re-read the list */
	uint64_t wait_cost_ns;    /* cpu: one wait's CPU (waitcost.h), kept in thread.wait_ns; 0: none */
	uint64_t timer_cost_ns;   /* cpu: one timer sleep's (waitcost_timer_ns) */
	int cost_pending;         /* cpu: both still being measured; the slices wait */
};

/*
 * Read t's CPU clock now (at tick number tick) and add what it used to its
 * cpu_pending; for the end of a capture, where the last tick's reads are
 * up to a period old.
 */
void moved_read(struct moved *mv, struct session *s, uint64_t tick, struct thread *t);

/* Start watching pid's threads; cold_slack_ns as above. */
void moved_init(struct moved *mv, pid_t pid, uint64_t cold_slack_ns);

/*
 * At tick number tick: read the clocks of the threads that may have run
 * (of tids[0..n), the session's threads), add what each used to its
 * cpu_pending and set its ran_tick; write those whose clock moved to
 * picked (room for n). Returns how many.
 */
uint32_t moved_pick(struct moved *mv, struct session *s, uint64_t tick, const pid_t *tids,
		    uint32_t n, pid_t *picked);

#endif
