/*
 * sampler.c — the sampling clock and the per-type thread policies. The
 * clock is a periodic timerfd; a late tick is reported as missed (the
 * weights stay right because they are measured, not assumed). The loop
 * sleeps in poll(2) on the timer and the session's signalfd, so a target
 * signal (which stops the receiving tracee until we re-inject it) is
 * answered within microseconds, not at the next tick.
 */
#include <errno.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "attach/kinds/kinds.h"
#include "attach/engine/sampler.h"
#include "common/err.h"
#include "common/proc.h"

#define RESCAN_NS 1000000000ull  /* look for new threads this often (a stat first) */
#define RESCAN_FORCE_NS 10000000000ull /* ... and read the list whatever the stat says */
#define HOT_TICKS 8              /* a thread idle this many ticks turns cold */
#define COLD_SCAN_NS 5000000ull  /* unexplained CPU per running thread that makes the cold read */
#define FULL_SCAN_NS 2000000000ull /* read every thread at least this often */
#define WALL_RESCAN_TICKS 10     /* wall: look for new threads this often */
#define WALL_COLD_SCAN_NS 1000000ull /* wall: unexplained CPU per running thread that makes the cold read */
#define PROC_CLOCK_MANY 64       /* above this many threads, read the process clock */
#define PROC_CLOCK_MAX_TICKS 50  /* every threads/PROC_CLOCK_MANY ticks, at most this many */
#define TRACER_NICE -10          /* the tracer's priority, where we may raise it */

static void emit_all(void *ctx, struct thread *t, struct snapshot *snap);

static void sampler_push(void *ctx, struct snapshot *snap)
{
	struct sampler *sm = ctx;

	snap->pid = sm->pid;
	snap->comm = sm->comm;
	if (queue_push(sm->queue, snap) < 0) {
		sm->lost++;
		snapshot_free(snap);
		return;
	}
	sm->samples++;
}

/*
 * A CPU sample stands for CPU used where the thread ran. A stop that found
 * the thread off a CPU shows where it waits, so the CPU pending goes to
 * where its last sample found it running (the same stack again): that
 * place is as much a draw from where the thread runs as its next one
 * would be (README: "A CPU sample stands for CPU used where the thread
 * ran"), and nothing waits on a thread that is rarely caught running (a
 * pipe reader behind a dozen busy threads was found in user code a few
 * times a capture, and its CPU was carried to the end, unattributed). A
 * thread never yet found running keeps its CPU for its first such sample.
 */
static void emit_cpu(void *ctx, struct thread *t, struct snapshot *snap)
{
	struct sampler *sm = ctx;

	if (snap->how == SNAP_STOPPED && snap->slept) {
		sm->found_asleep++;
		if (!(t->flags & THREAD_CHARGED) || !t->cpu_pending) {
			snapshot_free(snap);
			return;
		}
		snap->how = SNAP_REPEAT;
		snap->img.nstacks = 0;
	} else if (snap->how == SNAP_STOPPED) {
		t->flags |= THREAD_CHARGED;
	}
	snap->weight = (int64_t)t->cpu_pending;
	t->cpu_pending = 0;
	sampler_push(ctx, snap);
}

/* The whole process's CPU clock: one syscall, allowed for any process. */
static uint64_t process_cpu(pid_t pid)
{
	struct timespec ts;
	clockid_t c = (clockid_t)((~(unsigned)pid << 3) | 2); /* CPUCLOCK_SCHED, process-wide */

	if (clock_gettime(c, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Read t's CPU clock; add what it used to its pending CPU. Returns the delta. */
static uint64_t cpu_delta(struct sampler *sm, struct session *s, struct thread *t)
{
	uint64_t cpu;

	if (thread_read_cpu(&s->threads, t, &cpu) < 0 || cpu <= t->cpu_ns)
		return 0;
	t->cpu_pending += cpu - t->cpu_ns;
	t->ran_tick = sm->ticks;
	cpu -= t->cpu_ns;
	t->cpu_ns += cpu;
	return cpu;
}

/*
 * Which threads ran since the last tick: cpu samples them, wall re-reads
 * them (the others are where they were). To keep the
 * cost following the running threads and not the total, only "hot"
 * threads (busy within HOT_TICKS ticks) are read each tick; the process's
 * CPU clock says how much CPU the per-thread clocks have not explained,
 * and the cold threads are read only when that grows (or every
 * FULL_SCAN_NS as a safety net). The per-thread clocks lag the
 * process clock by the running threads' current slices, so the
 * unexplained CPU wobbles by up to a few ms per running thread without
 * any cold thread running; the trigger allows COLD_SCAN_NS per running
 * thread for that (wall, where a missed thread shows a stale stack,
 * allows WALL_COLD_SCAN_NS). A cold thread's CPU is never lost, only
 * noticed later: its clock keeps counting. On 3000 idle threads this
 * replaces 300,000 reads of schedstat a second by one process clock read
 * every n/PROC_CLOCK_MANY ticks (the kernel sums every thread for it:
 * ~0.4 ms for 3000) and a full read every FULL_SCAN_NS.
 */
/* Rebuild the hot list: the threads busy within HOT_TICKS ticks. */
static void hot_rebuild(struct sampler *sm, struct session *s, const pid_t *tids, uint32_t n)
{
	struct thread *t;
	uint32_t i;

	sm->nhot = 0;
	for (i = 0; i < n && sm->nhot < HOT_MAX; i++)
		if ((t = threads_get(&s->threads, tids[i])) && t->ran_tick &&
		    sm->ticks - t->ran_tick < HOT_TICKS)
			sm->hot[sm->nhot++] = tids[i];
	sm->hot_generation = s->threads.generation;
}

/* Read t's clock for this tick (once); pick it when it ran. */
static void cpu_visit(struct sampler *sm, struct session *s, struct thread *t, pid_t *picked,
		      uint32_t *npick)
{
	uint64_t d;

	if (t->flags & THREAD_READ)
		return;
	t->flags |= THREAD_READ;
	d = cpu_delta(sm, s, t);
	sm->unexplained_ns -= d < sm->unexplained_ns ? d : sm->unexplained_ns;
	sm->threads_read++;
	if (d)
		picked[(*npick)++] = t->tid;
}

/* Pick the threads whose clock moved since the last tick; returns how many. */
static uint32_t pick_moved(struct sampler *sm, struct session *s, const pid_t *tids, uint32_t n,
			   pid_t *picked)
{
	struct thread *t;
	uint32_t i, npick = 0, every;
	uint64_t now = 0;
	int cold;

	/*
	 * The process clock sums every thread in the kernel, so a process
	 * with many threads has it read less often.
	 */
	every = n / PROC_CLOCK_MANY;
	if (every > PROC_CLOCK_MAX_TICKS)
		every = PROC_CLOCK_MAX_TICKS;
	if (every <= 1 || sm->ticks % every == 0) {
		now = process_cpu(sm->pid);
		if (now > sm->proc_cpu)
			sm->unexplained_ns += now - sm->proc_cpu;
		sm->proc_cpu = now;
	}
	cold = clock_mono_ns() - sm->full_scan_ns >= FULL_SCAN_NS ||
	       s->threads.generation != sm->hot_generation;
	if (!cold) {
		for (i = 0; i < sm->nhot; i++)
			if ((t = threads_get(&s->threads, sm->hot[i])))
				cpu_visit(sm, s, t, picked, &npick);
		/* What the hot threads leave unexplained ran on cold ones, or new ones. */
		cold = now && sm->unexplained_ns > sm->explained_at_scan + sm->cold_slack_ns * (npick + 1);
		sm->rescan_due |= cold;
	}
	if (cold) {
		for (i = 0; i < n; i++)
			if ((t = threads_get(&s->threads, tids[i])))
				cpu_visit(sm, s, t, picked, &npick);
		sm->explained_at_scan = sm->unexplained_ns;
		sm->full_scan_ns = clock_mono_ns();
	}
	for (i = 0; i < (cold ? n : sm->nhot); i++)
		if ((t = threads_get(&s->threads, cold ? tids[i] : sm->hot[i])))
			t->flags &= ~THREAD_READ;
	if (cold)
		hot_rebuild(sm, s, tids, n);
	return npick;
}

static void tick_cpu(struct sampler *sm, struct session *s, const pid_t *tids, uint32_t n,
		     pid_t *picked)
{
	uint32_t npick = pick_moved(sm, s, tids, n, picked);

	/* One that fell asleep meanwhile keeps its CPU for its next sample. */
	session_sample(s, picked, npick, 1, emit_cpu, sm);
}

static void emit_all(void *ctx, struct thread *t, struct snapshot *snap)
{
	struct sampler *sm = ctx;

	snap->weight = (int64_t)(snap->time_ns - t->last_sample_ns);
	t->last_sample_ns = snap->time_ns;
	t->sample_tick = sm->ticks;
	if (sm->kind->policy == POLICY_ONCE)
		snap->weight = 1;
	sampler_push(sm, snap);
}

/* Give t's ticks since its last sample, where nothing moved, to its last stack. */
static void wall_flush(struct sampler *sm, struct session *s, struct thread *t, uint64_t upto)
{
	if (t->sample_tick && upto > t->sample_tick && !(t->flags & THREAD_HELD))
		session_repeat(s, t, (uint32_t)(upto - t->sample_tick), sm->prev_tick_ns, emit_all,
			       sm);
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
	if (sm->ticks % WALL_RESCAN_TICKS == 0 && session_count_changed(s))
		sm->rescan_due = 1;
	npick = pick_moved(sm, s, tids, n, picked);
	if (s->threads.generation != sm->wall_generation) {
		for (i = 0; i < n; i++)
			if ((t = threads_get(&s->threads, tids[i])) && !t->sample_tick &&
			    t->ran_tick != sm->ticks)
				picked[npick++] = tids[i];
		sm->wall_generation = s->threads.generation;
	}
	for (i = 0; i < npick; i++)
		if ((t = threads_get(&s->threads, picked[i])))
			wall_flush(sm, s, t, sm->ticks - 1);
	session_sample(s, picked, npick, 0, emit_all, sm);
}

static int sampler_tick(struct sampler *sm, struct session *s, pid_t **tids, uint32_t *cap)
{
	uint32_t n;

	if (s->threads.count > *cap / 2) {
		/* One buffer: all tids in the first half, picked tids in the second. */
		pid_t *v = realloc(*tids, s->threads.count * 4 * sizeof(**tids));

		if (!v)
			return -1;
		*tids = v;
		*cap = s->threads.count * 4;
		sm->tids_generation = 0;
	}
	/* The list changes only when a thread comes or goes: 3000 tids copied each tick cost 15%. */
	if (!sm->tids_generation || sm->tids_generation != s->threads.generation) {
		sm->ntids = threads_tids(&s->threads, *tids, *cap / 2);
		sm->tids_generation = s->threads.generation;
	}
	n = sm->ntids;
	sm->ticks++;
	if (sm->kind->policy == POLICY_CPU)
		tick_cpu(sm, s, *tids, n, *tids + *cap / 2);
	else if (sm->kind->policy == POLICY_WALL)
		tick_wall(sm, s, *tids, n, *tids + *cap / 2);
	else
		session_sample(s, *tids, n, 0, emit_all, sm);
	sm->prev_tick_ns = clock_mono_ns();
	return 0;
}

static void sampler_finish(struct sampler *sm, struct session *s)
{
	pid_t *tids = calloc(s->threads.count + 1, sizeof(*tids));
	struct thread *t;
	uint32_t i, n;

	n = tids ? threads_tids(&s->threads, tids, s->threads.count) : 0;
	for (i = 0; i < n; i++)
		if ((t = threads_get(&s->threads, tids[i]))) {
			/* CPU still pending goes where the thread was last found running. */
			if (sm->kind->policy == POLICY_CPU && (t->flags & THREAD_CHARGED) &&
			    t->cpu_pending && !(t->flags & THREAD_HELD))
				session_repeat(s, t, 1, 0, emit_cpu, sm);
			sm->cpu_unattributed_ns += t->cpu_pending;
			if (sm->kind->policy == POLICY_WALL)
				wall_flush(sm, s, t, sm->ticks);
		}
	free(tids);
	sm->gone = s->gone;
	sm->execed = s->execed;
	sm->lost_access = s->lost;
	sm->stop_signal = s->stop_signal;
	sm->stats = s->stats;
	sm->pause_p50_ns = session_pause_percentile(s, 50);
	sm->pause_p99_ns = session_pause_percentile(s, 99);
	sm->end_mono_ns = clock_mono_ns();
}

void *sampler_main(void *arg)
{
	struct sampler *sm = arg;
	struct session s;
	struct itimerspec its;
	struct pollfd pfd[3];
	uint64_t now, deadline, exp, last_rescan, last_forced;
	pid_t *tids = NULL;
	uint32_t cap = 0;
	int tfd = -1, timeout;

	if (session_init(&s, sm->pid, sm->stack_cap) < 0) {
		sm->attach_errno = EINVAL;
		goto out;
	}
	s.want_state = !!(sm->kind->labels & LABEL_STATE);
	if (sm->kind->policy != POLICY_ONCE) {
		/* The clock never waits for a thread that waits for a CPU. */
		s.defer_emit = sm->kind->policy == POLICY_CPU ? emit_cpu : emit_all;
		s.defer_ctx = sm;
		s.batch_ns = sm->period_ns / 2;
	}
	s.want_running = sm->kind->policy == POLICY_CPU;
	sm->cold_slack_ns = sm->kind->policy == POLICY_WALL ? WALL_COLD_SCAN_NS : COLD_SCAN_NS;
	s.hints = sm->hints;
	sm->start_real_ns = clock_real_ns();
	sm->start_mono_ns = clock_mono_ns();
	sm->proc_cpu = process_cpu(sm->pid);
	/*
	 * On a machine with more runnable threads than CPUs the tracer waits
	 * for a CPU like any of them, and ticks are missed: crowd (20
	 * runnable threads, 2 CPUs, load 18) took 91-96% of its ticks at
	 * nice 0, 97-99.7% at -10. Only this thread, and only where allowed
	 * (root, CAP_SYS_NICE); it spends the same CPU, only sooner.
	 */
	if (sm->kind->policy != POLICY_ONCE &&
	    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), TRACER_NICE) == 0)
		sm->niced = 1;
	if (session_start(&s) < 0) {
		sm->attach_errno = errno ? errno : ESRCH;
		goto out_session;
	}
	if (sm->kind->policy == POLICY_ONCE) {
		sampler_tick(sm, &s, &tids, &cap);
		goto done;
	}
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (tfd < 0) {
		error_errno("cannot create a timer");
		goto done;
	}
	memset(&its, 0, sizeof(its));
	its.it_interval.tv_sec = (time_t)(sm->period_ns / 1000000000u);
	its.it_interval.tv_nsec = (long)(sm->period_ns % 1000000000u);
	its.it_value = its.it_interval;
	timerfd_settime(tfd, 0, &its, NULL);
	if (!sm->quiet)
		note("profiling %d (%s): %s for %.3gs at %.0f Hz", (int)sm->pid, sm->comm,
		     sm->kind->name, (double)sm->duration_ns / 1e9, 1e9 / (double)sm->period_ns);
	deadline = sm->start_mono_ns + sm->duration_ns;
	last_rescan = last_forced = sm->start_mono_ns;
	pfd[0].fd = tfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = s.sigfd;
	pfd[1].events = POLLIN;
	pfd[2].fd = s.pidfd; /* -1 is ignored by poll */
	pfd[2].events = POLLIN;
	for (;;) {
		if (s.stop_signal || (sm->root && (s.gone || s.execed || s.lost))) {
			/* A signal to us, or the root's end, ends every tracer of a --children capture. */
			if (sm->stop_all)
				__atomic_store_n(sm->stop_all, 1, __ATOMIC_RELAXED);
			break;
		}
		if (s.gone || s.execed || s.lost ||
		    (sm->stop_all && __atomic_load_n(sm->stop_all, __ATOMIC_RELAXED)))
			break;
		now = clock_mono_ns();
		if (now >= deadline)
			break;
		timeout = (int)((deadline - now + 999999) / 1000000);
		if (poll(pfd, 3, timeout) < 0 && errno != EINTR)
			break;
		/* A held thread may be an exiting one whose exit waits on our reaping. */
		if (pfd[1].revents || pfd[2].revents || s.late)
			session_poll(&s);
		if (pfd[0].revents && read(tfd, &exp, sizeof(exp)) == (ssize_t)sizeof(exp)) {
			sm->ticks_missed += exp - 1;
			if (sampler_tick(sm, &s, &tids, &cap) < 0)
				break;
		}
		now = clock_mono_ns();
		if (sm->rescan_due || now - last_rescan >= RESCAN_NS) {
			/* A stat says whether the count changed; the whole list is read rarely. */
			if (sm->rescan_due || session_count_changed(&s) ||
			    now - last_forced >= RESCAN_FORCE_NS) {
				session_rescan(&s);
				last_forced = now;
			}
			last_rescan = now;
			sm->rescan_due = 0;
		}
	}
done:
	session_poll(&s);
	sampler_finish(sm, &s);
	if (tfd >= 0)
		close(tfd);
out_session:
	session_release(&s);
out:
	/* The root's end is the capture's: its descendants' tracers stop too. */
	if (sm->root && sm->stop_all)
		__atomic_store_n(sm->stop_all, 1, __ATOMIC_RELAXED);
	free(tids);
	queue_close(sm->queue);
	/* Returning ends the thread, and with it every ptrace attachment. */
	return NULL;
}
