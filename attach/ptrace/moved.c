/*
 * moved.c — which threads ran since the last tick (moved.h). The hot list,
 * the process clock's unexplained CPU and the full read that settles it.
 */
#include <time.h>

#include "attach/ptrace/moved.h"
#include "common/proc.h"
#include "common/waitcost.h"

#define HOT_TICKS 8              /* a thread idle this many ticks turns cold */
#define FULL_SCAN_NS 2000000000ull /* read every thread at least this often... */
#define FULL_SCAN_PER_THREAD_NS 2000000ull /* ... or, with many threads, this much per thread */
#define PROC_CLOCK_MANY 64       /* above this many threads, read the process clock */
#define PROC_CLOCK_MAX_TICKS 50  /* every threads/PROC_CLOCK_MANY ticks, at most this many */

#define SWITCHES_EVERY_NS 1000000000ull /* read a thread's switches at most this often */

/*
 * The share of t's slices that were waits, kept fresh: a preemption costs
 * a switch, never a timer (two loops beside a busy thread were preempted
 * at a quarter of their slices, and charged as sleeps they read 4-5
 * points low). The first read gives the thread's lifetime share.
 */
static uint32_t vol_share(struct session *s, struct thread *t)
{
	uint64_t now = clock_mono_ns(), v, i, dv, di;

	if (t->switches_ns && now - t->switches_ns < SWITCHES_EVERY_NS)
		return t->vol_permille;
	if (thread_read_switches(&s->threads, t, &v, &i) < 0)
		return t->vol_permille;
	dv = t->switches_ns ? v - t->vol : v;
	di = t->switches_ns ? i - t->invol : i;
	if (v >= t->vol && i >= t->invol && dv + di)
		t->vol_permille = (uint32_t)(1000 * dv / (dv + di));
	t->vol = v;
	t->invol = i;
	t->switches_ns = now;
	return t->vol_permille;
}

/* One wait's CPU for t: a switch, and a timer's extra for the waits its timer ends. */
static uint64_t wait_cost(struct moved *mv, struct session *s, struct thread *t)
{
	uint64_t c = waitcost_mix(mv->wait_cost_ns, mv->timer_cost_ns, t->stops_timed,
				  t->stops_asleep);

	if (c <= mv->wait_cost_ns)
		return c;
	return mv->wait_cost_ns + (c - mv->wait_cost_ns) * vol_share(s, t) / 1000;
}

/* Read t's CPU clock; add what it used to its pending CPU. Returns the delta. */
static uint64_t cpu_delta(struct moved *mv, uint64_t tick, struct session *s, struct thread *t)
{
	uint64_t cpu, w;

	if (thread_read_cpu(&s->threads, t, &cpu) < 0 || cpu <= t->cpu_ns)
		return 0;
	cpu -= t->cpu_ns;
	t->cpu_ns += cpu;
	t->ran_tick = tick;
	/*
	 * The kernel's side of its waits is not where any stop lands
	 * (waitcost.h): part of the CPU it used since the last read. Slices
	 * that waited for the measurement are weighed at the first read
	 * after it, against that read's CPU only (the cap of every read:
	 * weighed against the CPU pending too, the estimate of two loops
	 * beside a busy thread took more than the handler left).
	 */
	w = 0;
	if (mv->cost_pending && waitcost_ready(&mv->wait_cost_ns, &mv->timer_cost_ns))
		mv->cost_pending = 0;
	if (!mv->cost_pending && t->slices > t->slices_waited) {
		w = waitcost_of(t->slices - t->slices_waited, wait_cost(mv, s, t), cpu);
		t->slices_waited = t->slices;
	}
	t->wait_ns += w;
	t->cpu_pending += cpu - w;
	return cpu;
}

/*
 * The per-thread clocks lag the process clock by the running threads'
 * current slices, so the unexplained CPU wobbles by up to a few ms per
 * running thread without any cold thread running; the trigger allows
 * cold_slack_ns per running thread for that (the policy's choice: wall,
 * where a missed thread shows a stale stack, allows less). On 3000 idle
 * threads this replaces 300,000 reads of schedstat a second by one
 * process clock read every n/PROC_CLOCK_MANY ticks (the kernel sums every
 * thread for it, so it too costs in proportion to the threads) and a full
 * read every FULL_SCAN_NS. That safety net (the process clock already
 * catches cold CPU past the slack) is stretched to 2 ms per thread past
 * 1000 threads: a read of every schedstat costs per thread, and on
 * thousands of idle threads a net every 2 s was much of the ptrace
 * sampler's own CPU.
 */

/* Rebuild the hot list: the threads busy within HOT_TICKS ticks. */
static void hot_rebuild(struct moved *mv, struct session *s, uint64_t tick, const pid_t *tids,
			uint32_t n)
{
	struct thread *t;
	uint32_t i;

	mv->nhot = 0;
	for (i = 0; i < n && mv->nhot < MOVED_HOT_MAX; i++)
		if ((t = threads_get(&s->threads, tids[i])) && t->ran_tick &&
		    tick - t->ran_tick < HOT_TICKS)
			mv->hot[mv->nhot++] = tids[i];
	mv->hot_generation = s->threads.generation;
}

/* Read t's clock for this tick (once); pick it when it ran. */
static void cpu_visit(struct moved *mv, struct session *s, uint64_t tick, struct thread *t,
		      pid_t *picked, uint32_t *npick)
{
	uint64_t d;

	if (t->flags & THREAD_READ)
		return;
	t->flags |= THREAD_READ;
	d = cpu_delta(mv, tick, s, t);
	mv->unexplained_ns -= d < mv->unexplained_ns ? d : mv->unexplained_ns;
	mv->threads_read++;
	if (d)
		picked[(*npick)++] = t->tid;
}

uint32_t moved_pick(struct moved *mv, struct session *s, uint64_t tick, const pid_t *tids,
		    uint32_t n, pid_t *picked)
{
	struct thread *t;
	uint32_t i, npick = 0, every;
	uint64_t now = 0, full;
	int cold;

	/*
	 * The process clock sums every thread in the kernel, so a process
	 * with many threads has it read less often.
	 */
	every = n / PROC_CLOCK_MANY;
	if (every > PROC_CLOCK_MAX_TICKS)
		every = PROC_CLOCK_MAX_TICKS;
	if (every <= 1 || tick % every == 0) {
		now = clock_process_cpu_ns(mv->pid);
		if (now > mv->proc_cpu)
			mv->unexplained_ns += now - mv->proc_cpu;
		mv->proc_cpu = now;
	}
	full = (uint64_t)n * FULL_SCAN_PER_THREAD_NS;
	if (full < FULL_SCAN_NS)
		full = FULL_SCAN_NS;
	cold = clock_mono_ns() - mv->full_scan_ns >= full ||
	       s->threads.generation != mv->hot_generation;
	if (!cold) {
		for (i = 0; i < mv->nhot; i++)
			if ((t = threads_get(&s->threads, mv->hot[i])))
				cpu_visit(mv, s, tick, t, picked, &npick);
		/* What the hot threads leave unexplained ran on cold ones, or new ones. */
		cold = now && mv->unexplained_ns > mv->explained_at_scan + mv->cold_slack_ns * (npick + 1);
		mv->rescan_due |= cold;
	}
	if (cold) {
		for (i = 0; i < n; i++)
			if ((t = threads_get(&s->threads, tids[i])))
				cpu_visit(mv, s, tick, t, picked, &npick);
		/* Every known thread read and still unexplained: threads we do not know. */
		if (now && mv->unexplained_ns > mv->explained_at_scan + mv->cold_slack_ns * (npick + 1))
			mv->rescan_due = 1;
		mv->explained_at_scan = mv->unexplained_ns;
		mv->full_scan_ns = clock_mono_ns();
	}
	for (i = 0; i < (cold ? n : mv->nhot); i++)
		if ((t = threads_get(&s->threads, cold ? tids[i] : mv->hot[i])))
			t->flags &= ~THREAD_READ;
	if (cold)
		hot_rebuild(mv, s, tick, tids, n);
	return npick;
}

void moved_read(struct moved *mv, struct session *s, uint64_t tick, struct thread *t)
{
	cpu_delta(mv, tick, s, t);
	mv->threads_read++;
}

void moved_init(struct moved *mv, pid_t pid, uint64_t cold_slack_ns)
{
	mv->pid = pid;
	mv->cold_slack_ns = cold_slack_ns;
	mv->proc_cpu = mv->proc_cpu_start = clock_process_cpu_ns(pid);
	mv->unexplained_ns = mv->explained_at_scan = 0;
	mv->full_scan_ns = 0; /* the first tick reads every thread */
	mv->nhot = 0;
	mv->hot_generation = 0;
	mv->threads_read = 0;
	mv->rescan_due = 0;
	mv->wait_cost_ns = mv->timer_cost_ns = 0;
	mv->cost_pending = 0;
}
