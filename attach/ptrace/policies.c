/*
 * policies.c — the cpu, wall and threads policies (policies.h): what a
 * tick samples and what each sample weighs. The clock, the stops and the
 * queue are sampler.c's and session's; a new ptrace-based profile type is
 * a new row here.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "attach/ptrace/policies.h"
#include "common/proc.h"
#include "common/waitcost.h"

#define COLD_SCAN_NS 5000000ull      /* cpu: unexplained CPU per running thread that makes the cold read */
#define WALL_COLD_SCAN_NS 1000000ull /* wall: the same; a missed thread shows a stale stack */
#define WALL_RESCAN_TICKS 10         /* wall: look for new threads this often */
#define ONCE_BATCH 8                 /* once: threads read between closes of their descriptors */
#define SHORT_MIN_NS 1000000ull      /* cpu: unexplained CPU below this (or 0.5%) is read skew */

/*
 * The time whose program labels a CPU sample carries: where the thread
 * ran. A stop's is when we asked: a thread running then may stop only at
 * its next entry to the kernel (a late kick), and stops crowd at such
 * entries (a system call, a page fault), whose labels are no draw from
 * where it ran. CPU carried from a stop that ran on after we asked takes
 * the same; from one that found the thread off its CPU (asleep, or
 * preempted at a call's exit), its last stop found running's: a fair
 * draw, but one given to every such stop after it, so that on a busy
 * machine the per-label shares vary more than their samples' count says
 * (doc/limits.md).
 */
static uint64_t carried_labels_ns(const struct thread *t, const struct snapshot *snap)
{
	return !snap->slept && snap->asked_ns ? snap->asked_ns : t->ran_ns;
}

/*
 * A CPU sample stands for CPU used where the thread ran. A stop that found
 * the thread off a CPU shows where it waits, so the CPU pending goes to
 * where its last sample found it running (the same stack again): that
 * place is as much a draw from where the thread runs as its next one
 * would be (doc/how-it-works.md: "A CPU sample stands for CPU used where
 * the thread ran"), and nothing waits on a thread that is rarely caught
 * running (a pipe reader behind a dozen busy threads was found in user
 * code a few times a capture, and its CPU was carried to the end,
 * unattributed). A stop that ran on into a later call (a slide, or a
 * timer sleep's entry on any host: stopcopy.c) is no more where the thread
 * ran. A thread never yet found running keeps its CPU for its first such
 * sample.
 */
static void emit_cpu(void *ctx, struct thread *t, struct snapshot *snap)
{
	struct sampler *sm = ctx;

	if (snap->how == SNAP_STOPPED && (snap->slept || snap->slid || snap->ran_to_sleep)) {
		if (snap->slept) {
			sm->res.found_asleep++;
			/* Which of a wait's costs its waits have (waitcost_mix): its timer ends these. */
			t->stops_asleep++;
			if (snap->slept_nr == SYS_nanosleep || snap->slept_nr == SYS_clock_nanosleep)
				t->stops_timed++;
		}
		if (!(t->flags & THREAD_CHARGED) || !t->cpu_pending) {
			snapshot_free(snap);
			return;
		}
		snap->how = SNAP_REPEAT;
		snap->img.nstacks = 0;
		snap->ran_ns = carried_labels_ns(t, snap);
	} else if (snap->how == SNAP_STOPPED) {
		t->flags |= THREAD_CHARGED;
		t->ran_ns = snap->ran_ns = snap->asked_ns ? snap->asked_ns : snap->time_ns;
	} else if (snap->how == SNAP_REPEAT) {
		/* CPU carried to its last stack found running at the end: that stop's labels. */
		snap->ran_ns = t->ran_ns;
	}
	snap->weight = (int64_t)t->cpu_pending;
	t->cpu_pending = 0;
	sampler_push(sm, snap);
}

static void tick_cpu(struct sampler *sm, struct session *s, const pid_t *tids, uint32_t n,
		     pid_t *picked)
{
	uint32_t npick = moved_pick(&sm->mv, s, sm->res.ticks, tids, n, picked);

	/* One that fell asleep meanwhile keeps its CPU for its next sample. */
	session_sample(s, picked, npick, 1, emit_cpu, sm);
}

/* A sample with no stack: CPU under one named frame; t NULL for no thread. */
static void emit_marker(struct sampler *sm, struct thread *t, const char *marker, uint64_t ns)
{
	struct snapshot *snap = calloc(1, sizeof(*snap));

	if (!snap)
		return;
	snap->how = SNAP_MARKER;
	snap->marker = marker;
	snap->state = '?';
	snap->syscall = -1;
	snap->time_ns = clock_mono_ns();
	snap->weight = (int64_t)ns;
	if (t) {
		snap->tid = t->tid;
		memcpy(snap->name, t->name, sizeof(snap->name));
	}
	sampler_push(sm, snap);
}

/*
 * CPU still pending (its clock read once more: the last tick's read is up
 * to a period old) goes where the thread was last found running; a
 * thread never found running has its CPU under a marker, so that the
 * profile's total is the process's. A thread whose stop is still due
 * (held) is settled the same way: its stop will not be read.
 */
static void finish_cpu(struct sampler *sm, struct session *s, struct thread *t)
{
	moved_read(&sm->mv, s, sm->res.ticks, t);
	if (t->wait_ns) {
		if (!t->name[0])
			thread_read_name(&s->threads, t);
		sm->res.cpu_waits_ns += t->wait_ns;
		emit_marker(sm, t, WAITCOST_FRAME, t->wait_ns);
		t->wait_ns = 0;
	}
	if (!t->cpu_pending)
		return;
	if (t->flags & THREAD_CHARGED) {
		session_repeat(s, t, 1, 0, emit_cpu, sm);
		return;
	}
	sm->res.cpu_unattributed_ns += t->cpu_pending;
	if (!t->name[0])
		thread_read_name(&s->threads, t);
	emit_marker(sm, t, "[not captured: never found running]", t->cpu_pending);
	t->cpu_pending = 0;
}

/*
 * The process's CPU clock against what the samples weigh: what no
 * thread's clock showed ran in threads that lived and died between two
 * reads of the thread list (or between a thread's last read and its
 * exit), and appears as one frame. A little is read skew (the clocks are
 * read one after another): less than SHORT_MIN_NS, or 0.5% of the
 * process's CPU, is left out.
 */
static void end_cpu(struct sampler *sm, struct session *s)
{
	uint64_t now = clock_process_cpu_ns(sm->cfg.pid), floor, cpu;

	(void)s;
	if (!now || now < sm->mv.proc_cpu_start)
		return;
	cpu = now - sm->mv.proc_cpu_start;
	sm->res.cpu_process_ns = cpu;
	floor = cpu / 200 > SHORT_MIN_NS ? cpu / 200 : SHORT_MIN_NS;
	if (cpu < sm->res.weighed_ns + floor)
		return;
	sm->res.cpu_short_ns = cpu - sm->res.weighed_ns;
	emit_marker(sm, NULL, SHORT_LIVED_FRAME, sm->res.cpu_short_ns);
}

const struct policy policy_cpu = {
	.name = "cpu",
	.flags = POLICY_DEFER | POLICY_RUNNING | POLICY_EAGER | POLICY_WAITS,
	.cold_slack_ns = COLD_SCAN_NS,
	.tick = tick_cpu,
	.emit = emit_cpu,
	.finish = finish_cpu,
	.end = end_cpu,
};

/*
 * A fresh wall sample (a stop or a sleep read, not a repeat) stands for
 * the time since the thread's last sample, and the thread's own clocks
 * say how that time went: its CPU clock moved by what it ran, its
 * run-queue time (schedstat) by what it waited for a CPU, and the rest it
 * slept. A look at one instant labels the whole span by that instant: a
 * thread that works 50 us in 250 came out running 0.72-0.88 of its CPU
 * and runnable anywhere from 0.35 to 1.65 times its run-queue time
 * (issue 26, item 7). So the span is split by the clocks, and each part
 * goes to the stack of its kind (ptracesrc.c): the CPU to the thread's
 * last stack found running, the wait for a CPU to this stack, the sleep
 * to its last sleep. Summed over a capture the parts are the clocks'
 * deltas, whatever the looks saw: a part the span cannot hold (the
 * clocks count a wait when it ends, and our ticks bunch when the tracer
 * waits for a CPU) is carried to the next span, not dropped: dropped, a
 * thread behind busy ones lost run-queue time and CPU to its sleep. A
 * thread's first sample has no earlier
 * clock reading of ours to split by. The CPU a thread ran before any stop
 * found it running has no running stack yet (on a loaded machine our
 * stops can come after a short burst for a second): it is held, out of
 * the samples' weight, and given to the first stack found running, or at
 * the end (finish_wall, emit_unplaced) to its last stack.
 */
static void split_elapsed(struct thread *t, struct snapshot *snap)
{
	uint64_t w = snap->weight > 0 ? (uint64_t)snap->weight : 0, c, q;

	int ran = snap->ran_here = snapshot_ran_here(snap);

	c = t->cpu_ns > t->cpu_sample_ns ? t->cpu_ns - t->cpu_sample_ns : 0;
	q = t->queued_ns > t->queued_sample_ns ? t->queued_ns - t->queued_sample_ns : 0;
	if (!(t->cpu_sample_ns && t->sample_tick)) {
		t->flags |= ran ? THREAD_RAN : 0;
		t->cpu_sample_ns = t->cpu_ns;
		t->queued_sample_ns = t->queued_ns;
	} else {
		snap->split = 1;
		snap->ran_ns = t->ran_ns; /* its CPU part's labels, when not running here */
		snap->split_cpu = c < w ? c : w;
		snap->split_queued = q < w - snap->split_cpu ? q : w - snap->split_cpu;
		/* What the span cannot hold is the next span's (see above). */
		t->cpu_sample_ns += snap->split_cpu;
		t->queued_sample_ns += snap->split_queued;
		snap->rest_syscall = t->asleep_nr;
		if (ran) {
			t->flags |= THREAD_RAN;
			snap->split_cpu += t->cpu_unplaced;
			snap->weight += (int64_t)t->cpu_unplaced;
			snap->count += t->ticks_unplaced;
			t->cpu_unplaced = t->ticks_unplaced = 0;
		} else if (!(t->flags & THREAD_RAN)) {
			t->cpu_unplaced += snap->split_cpu;
			snap->weight -= (int64_t)snap->split_cpu;
			snap->split_cpu = 0;
		}
	}
}

/*
 * Weight: the time since the thread's previous sample. A thread is
 * stopped because it was running or runnable when its tick looked; a stop
 * that then found it asleep in a call (it went to sleep meanwhile: a
 * 50 us burst often does) or that ran on to a later call (a host whose
 * kicks wait for its next kernel entry: the stop lands there, or breaks
 * the sleep it enters; or, on any host, into a timer sleep's entry, or
 * is found inside a timer sleep at all: such a call sleeps within
 * microseconds of its entry, so what the thread ran since its last
 * sample it ran before the call) is not where it ran: such a
 * sample stands for its last stack found running, as a CPU sample's CPU
 * is carried. A thread with no stack yet (its first sample) has nothing
 * to stand for: found asleep, it is a sample of its sleep; ran on, one of
 * where it stopped (repeated with no stack, it came out stackless).
 */
static void emit_elapsed(void *ctx, struct thread *t, struct snapshot *snap)
{
	struct sampler *sm = ctx;
	int fresh = snap->how == SNAP_STOPPED || snap->how == SNAP_SYSCALL;

	if (snap->how == SNAP_STOPPED && !snap->queued &&
	    (snap->ran_on || snap->ran_to_sleep || snap->slept || snap->in_timer_sleep)) {
		if (t->flags & THREAD_STACKED) {
			snap->how = SNAP_REPEAT;
			snap->repeat_running = 1;
			snap->img.nstacks = 0;
		} else if (snap->slept) {
			snap->how = SNAP_SYSCALL;
			snap->syscall = snap->slept_nr;
			snap->state = 'S';
		} else {
			snap->slid = 1; /* kept here, but never its running stack (ptracesrc.c) */
		}
	}
	if (snap->how == SNAP_STOPPED || snap->how == SNAP_SYSCALL)
		t->flags |= THREAD_STACKED;
	/* Standing for its last stack found running: that stop's labels too. */
	if (snap->how == SNAP_REPEAT && (snap->repeat_running || snap->repeat_state == 'R'))
		snap->ran_ns = t->ran_ns;
	snap->weight = (int64_t)(snap->time_ns - t->last_sample_ns);
	/* Until its first split the run-queue time since any sample is not ours to carry. */
	if (!t->cpu_sample_ns)
		t->queued_sample_ns = t->queued_ns;
	if (fresh)
		split_elapsed(t, snap);
	if (snapshot_ran_here(snap))
		t->ran_ns = snap->time_ns;
	t->last_sample_ns = snap->time_ns;
	t->sample_tick = sm->res.ticks;
	sampler_push(sm, snap);
}

/* A flush's CPU of a thread with no running stack yet: held (split_elapsed). */
static void emit_held(void *ctx, struct thread *t, struct snapshot *snap)
{
	(void)ctx;
	t->cpu_unplaced += snap->time_ns - t->last_sample_ns;
	t->ticks_unplaced += snap->count;
	t->last_sample_ns = snap->time_ns;
	snapshot_free(snap);
}

/*
 * The state of a flush's rest, the time the thread's clocks say it neither
 * ran nor waited for a CPU: asleep, when its last sample found it running
 * or runnable (it went to sleep after that look: repeated as running, a
 * burst thread behind busy ones came out running more than its CPU), else
 * its last sample's state (0: a sleep's own letter, S or D).
 */
static char rest_state(const struct thread *t)
{
	return t->last_state == 'R' || t->last_state == SNAP_STATE_QUEUED ? 'S' : 0;
}

/*
 * Give t's ticks since its last sample, where its clock did not move, to
 * its last stack. A thread that waited for a CPU meanwhile (woken, or
 * preempted) did not move either: the run-queue time its schedstat added
 * since (counted when it got the CPU, read when it was picked) is given
 * as runnable, the rest in rest_state(). A thread that ran
 * more since its last split sample than the time since the last tick
 * (split_elapsed) ran in these ticks too, though not picked for it: the
 * trigger that picks cold threads allows some slack. That CPU is given
 * to its last running stack here, so that the fresh sample's split is
 * not cut to its own span.
 */
static void wall_flush(struct sampler *sm, struct session *s, struct thread *t, uint64_t upto)
{
	uint64_t q, x = 0, span, fresh, nq, nx, n, at;

	if (!t->sample_tick || upto <= t->sample_tick)
		return;
	n = upto - t->sample_tick;
	span = sm->prev_tick_ns > t->last_sample_ns ? sm->prev_tick_ns - t->last_sample_ns : 0;
	q = t->queued_ns > t->queued_sample_ns ? t->queued_ns - t->queued_sample_ns : 0;
	if (q > span)
		q = span;
	if (t->cpu_sample_ns && t->cpu_ns > t->cpu_sample_ns) {
		fresh = clock_mono_ns() - sm->prev_tick_ns;
		x = t->cpu_ns - t->cpu_sample_ns;
		x = x > fresh ? x - fresh : 0;
		if (x > span - q)
			x = span - q;
		t->cpu_sample_ns += x;
	}
	if (!sm->prev_tick_ns || !span) {
		session_repeat(s, t, (uint32_t)n, sm->prev_tick_ns, emit_elapsed, sm);
		return;
	}
	if (!q && !x) {
		session_repeat_as(s, t, (uint32_t)n, sm->prev_tick_ns, rest_state(t), emit_elapsed,
				  sm);
		return;
	}
	nq = (n * q + span / 2) / span;
	nx = (n * x + span / 2) / span;
	if (nx > n - nq)
		nx = n - nq;
	at = sm->prev_tick_ns - q - x;
	if (at > t->last_sample_ns)
		session_repeat_as(s, t, (uint32_t)(n - nq - nx), at, rest_state(t), emit_elapsed, sm);
	if (x)
		session_repeat_as(s, t, (uint32_t)nx, at + x, 'R',
				  t->flags & THREAD_RAN ? emit_elapsed : emit_held, sm);
	if (q) {
		session_repeat_as(s, t, (uint32_t)nq, sm->prev_tick_ns, SNAP_STATE_QUEUED,
				  emit_elapsed, sm);
		t->queued_sample_ns += q;
	}
}

/*
 * Wall: every thread, running or not; but a thread whose clock has not
 * moved is where it was, and its ticks are added up and given to its last
 * stack in one sample when it moves or the capture ends. A thread with
 * no sample yet is read at once.
 */
static void tick_wall(struct sampler *sm, struct session *s, const pid_t *tids, uint32_t n,
		      pid_t *picked)
{
	struct thread *t;
	uint32_t i, npick;

	/* New threads' time counts from their discovery; a stat says if there are any. */
	if (sm->res.ticks % WALL_RESCAN_TICKS == 0 && session_count_changed(s))
		sm->mv.rescan_due = 1;
	npick = moved_pick(&sm->mv, s, sm->res.ticks, tids, n, picked);
	if (s->threads.generation != sm->wall_generation) {
		for (i = 0; i < n; i++)
			if ((t = threads_get(&s->threads, tids[i])) && !t->sample_tick &&
			    t->ran_tick != sm->res.ticks)
				picked[npick++] = tids[i];
		sm->wall_generation = s->threads.generation;
	}
	for (i = 0; i < npick; i++)
		if ((t = threads_get(&s->threads, picked[i])))
			wall_flush(sm, s, t, sm->res.ticks - 1);
	session_sample(s, picked, npick, 0, emit_elapsed, sm);
}

/*
 * The CPU a thread ran with no stop ever finding it running
 * (split_elapsed), at the end: on its last stack, labelled running (a
 * thread that wakes for microseconds now and then has no other; one that
 * works in bursts has had a running stop long before the end, unless the
 * machine kept our stops off it the whole window).
 */
static void emit_unplaced(void *ctx, struct thread *t, struct snapshot *snap)
{
	struct sampler *sm = ctx;

	snap->weight = (int64_t)t->cpu_unplaced;
	snap->count = t->ticks_unplaced;
	snap->ran_ns = t->ran_ns;
	snap->split = 1;
	snap->split_cpu = t->cpu_unplaced;
	t->cpu_unplaced = t->ticks_unplaced = 0;
	sampler_push(sm, snap);
}

static void finish_wall(struct sampler *sm, struct session *s, struct thread *t)
{
	wall_flush(sm, s, t, sm->res.ticks);
	if (t->cpu_unplaced)
		session_repeat_as(s, t, 0, t->last_sample_ns, 'R', emit_unplaced, sm);
}

const struct policy policy_wall = {
	.name = "wall",
	.flags = POLICY_DEFER | POLICY_LOOK,
	.cold_slack_ns = WALL_COLD_SCAN_NS,
	.tick = tick_wall,
	.emit = emit_elapsed,
	.finish = finish_wall,
};

static void emit_once(void *ctx, struct thread *t, struct snapshot *snap)
{
	(void)t;
	snap->weight = 1;
	sampler_push(ctx, snap);
}

/*
 * A few threads at a time, their /proc descriptors closed once read: kept
 * open, 4 per thread, they grew the descriptor table past 256 and 512
 * entries, and the kernel grows the table of a multi-threaded process only
 * after an RCU grace period: each growth waited one out, a large part of
 * a snapshot, for descriptors that are never read again.
 */
static void tick_once(struct sampler *sm, struct session *s, const pid_t *tids, uint32_t n,
		      pid_t *picked)
{
	struct thread *t;
	uint32_t i, j, m;

	(void)picked;
	for (i = 0; i < n; i += m) {
		m = n - i < ONCE_BATCH ? n - i : ONCE_BATCH;
		session_sample(s, tids + i, m, 0, emit_once, sm);
		for (j = i; j < i + m; j++)
			if ((t = threads_get(&s->threads, tids[j])))
				thread_close_files(t);
	}
}

static void finish_none(struct sampler *sm, struct session *s, struct thread *t)
{
	(void)sm;
	(void)s;
	(void)t;
}

const struct policy policy_once = {
	.name = "once",
	.flags = POLICY_ONCE,
	.cold_slack_ns = COLD_SCAN_NS,
	.tick = tick_once,
	.emit = emit_once,
	.finish = finish_none,
};
