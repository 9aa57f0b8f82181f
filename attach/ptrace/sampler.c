/*
 * sampler.c — the sampling clock; what each tick samples is the policy's
 * (policies.c). The clock is a periodic timerfd; a late tick is reported as missed (the
 * weights stay right because they are measured, not assumed). The loop
 * sleeps in poll(2) on the timer, the session's signalfd and the
 * watchdog's stop descriptor (common/watchdog.h), so a target
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

#include "attach/ptrace/chldwake.h"
#include "attach/capture/target.h"
#include "attach/ptrace/sampler.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/waitcost.h"
#include "common/watchdog.h"

#define RESCAN_NS 1000000000ull  /* look for new threads this often (a stat first) */
#define RESCAN_FORCE_NS 10000000000ull /* ... and read the list whatever the stat says */
#define TRACER_NICE -10          /* the tracer's priority, where we may raise it */
#define EAGER_MAX_THREADS 512    /* POLICY_EAGER: above this many threads (a list read costs ~1 ms) */
#define EAGER_EVERY 10           /* ... look only every this many ticks */

void sampler_push(struct sampler *sm, struct snapshot *snap)
{
	/* Once queued the snapshot is the consumer's, who may free it at once. */
	uint64_t weight = (uint64_t)snap->weight;

	snap->pid = sm->cfg.pid;
	snap->comm = sm->cfg.comm;
	if (queue_push(sm->cfg.queue, snap) < 0) {
		sm->res.lost++;
		snapshot_free(snap);
		return;
	}
	sm->res.samples++;
	sm->res.weighed_ns += weight;
}

static int sampler_tick(struct sampler *sm, struct session *s, pid_t **tids, uint32_t *cap)
{
	uint32_t n;

	/*
	 * A thread that lives for a few ms (a thread per request) is seen
	 * only if the list is read while it lives: a stat of /proc/PID/task
	 * (its link count) each tick says when to.
	 */
	if ((sm->cfg.policy->flags & POLICY_EAGER) &&
	    (s->threads.count <= EAGER_MAX_THREADS || sm->res.ticks % EAGER_EVERY == 0) &&
	    session_count_changed(s))
		session_rescan(s);
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
	sm->res.ticks++;
	sm->cfg.policy->tick(sm, s, *tids, n, *tids + *cap / 2);
	sm->prev_tick_ns = clock_mono_ns();
	if (sm->cfg.tick_hook)
		sm->cfg.tick_hook(sm->cfg.tick_ctx);
	return 0;
}

/*
 * Stops asked for by the last ticks and still waiting for a CPU: give them
 * up to a period to come (each is a sample already weighed in), then let
 * the policy settle the rest. Under load a pipe thread held at the end
 * otherwise took its whole carried CPU with it, and a crowd's profile
 * showed part of its CPU as [short-lived threads] that were no such thing.
 */
static void sampler_settle_late(struct sampler *sm, struct session *s)
{
	struct pollfd pfd[3] = { { .fd = s->sigfd, .events = POLLIN },
				 { .fd = watchdog_fd(), .events = POLLIN },
				 { .fd = s->wakefd, .events = POLLIN } };
	uint64_t now = clock_mono_ns(), deadline = now + sm->cfg.period_ns;

	chldwake_waiting(s->wakeslot, 1);
	while (s->late && now < deadline && !s->stop_signal) {
		poll(pfd, 3, (int)((deadline - now + 999999) / 1000000));
		session_poll(s);
		now = clock_mono_ns();
	}
	chldwake_waiting(s->wakeslot, 0);
}

static void sampler_finish(struct sampler *sm, struct session *s)
{
	pid_t *tids;
	struct thread *t;
	uint32_t i, n;

	if (sm->cfg.policy->flags & POLICY_DEFER)
		sampler_settle_late(sm, s);
	/* A capture shorter than the measurement waits for it now: its last reads weigh the slices. */
	if (sm->mv.cost_pending) {
		sm->mv.wait_cost_ns = waitcost_ns();
		sm->mv.timer_cost_ns = waitcost_timer_ns();
		sm->mv.cost_pending = 0;
	}
	sm->res.wait_cost_ns = sm->mv.wait_cost_ns;
	sm->res.timer_cost_ns = sm->mv.timer_cost_ns;
	tids = calloc(s->threads.count + 1, sizeof(*tids));
	n = tids ? threads_tids(&s->threads, tids, s->threads.count) : 0;
	for (i = 0; i < n; i++)
		if ((t = threads_get(&s->threads, tids[i])))
			sm->cfg.policy->finish(sm, s, t);
	free(tids);
	if (sm->cfg.policy->end)
		sm->cfg.policy->end(sm, s);
	sm->res.gone = s->gone;
	sm->res.execed = s->execed;
	sm->res.lost_access = s->lost;
	sm->res.stop_signal = s->stop_signal;
	sm->res.stats = s->stats;
	sm->res.threads_read = sm->mv.threads_read;
	sm->res.pause_p50_ns = session_stats_percentile(&s->stats, 50);
	sm->res.pause_p99_ns = session_stats_percentile(&s->stats, 99);
	sm->res.end_mono_ns = clock_mono_ns();
}

/* The session's settings from the policy, and the wait costs, before attaching. */
static void sampler_setup(struct sampler *sm, struct session *s)
{
	const struct sampler_cfg *c = &sm->cfg;
	struct sampler_results *r = &sm->res;

	s->want_state = c->want_state;
	s->no_baseline = !!(c->policy->flags & POLICY_ONCE);
	if (c->policy->flags & (POLICY_DEFER | POLICY_ONCE)) {
		/*
		 * The clock never waits for a thread that waits for a CPU; a
		 * snapshot asks every running thread first and then waits for
		 * the stops together (session_await_deferred).
		 */
		s->defer_emit = c->policy->emit;
		s->defer_ctx = sm;
		s->batch_ns = c->policy->flags & POLICY_ONCE ? 0 : c->period_ns / 2;
	}
	s->want_look = !!(c->policy->flags & (POLICY_RUNNING | POLICY_LOOK));
	s->want_kstack = c->want_kstack;
	s->hints = c->hints;
	/*
	 * On a machine with more runnable threads than CPUs the tracer waits
	 * for a CPU like any of them, and ticks are missed; at a higher
	 * priority it misses fewer. Only this thread, and only where allowed
	 * (root, CAP_SYS_NICE); it spends the same CPU, only sooner.
	 */
	if (!(c->policy->flags & POLICY_ONCE) &&
	    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), TRACER_NICE) == 0)
		r->niced = 1;
}

/*
 * The clock: a tick every period until the deadline, a stop signal, the
 * target's end (the root's ends every tracer of a --children capture) or
 * a failed tick; the thread list rescanned when it may have changed.
 */
static void sampler_clock(struct sampler *sm, struct session *s, pid_t **tids, uint32_t *cap)
{
	const struct sampler_cfg *c = &sm->cfg;
	struct sampler_results *r = &sm->res;
	struct itimerspec its;
	struct pollfd pfd[5];
	uint64_t now, deadline, exp, last_rescan, last_forced;
	int tfd, timeout;

	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (tfd < 0) {
		error_errno("cannot create a timer");
		return;
	}
	memset(&its, 0, sizeof(its));
	its.it_interval.tv_sec = (time_t)(c->period_ns / 1000000000u);
	its.it_interval.tv_nsec = (long)(c->period_ns % 1000000000u);
	its.it_value = its.it_interval;
	timerfd_settime(tfd, 0, &its, NULL);
	if (!c->quiet)
		target_say_capture(c->pid, c->comm, c->stop_all != NULL, c->what, c->duration_ns,
				   c->period_ns, c->how);
	deadline = r->start_mono_ns + c->duration_ns;
	last_rescan = last_forced = r->start_mono_ns;
	pfd[0].fd = tfd;
	pfd[1].fd = s->sigfd;
	pfd[2].fd = s->pidfd; /* -1 is ignored by poll */
	pfd[3].fd = watchdog_fd(); /* the stop signals, when the watchdog takes them */
	pfd[4].fd = s->wakefd; /* a SIGCHLD another tracer read (chldwake.h) */
	for (int i = 0; i < 5; i++)
		pfd[i].events = POLLIN;
	for (;;) {
		if (s->stop_signal || (c->root && (s->gone || s->execed || s->lost))) {
			/* A signal to us, or the root's end, ends every tracer of a --children capture. */
			if (c->stop_all)
				__atomic_store_n(c->stop_all, 1, __ATOMIC_RELAXED);
			break;
		}
		if (s->gone || s->execed || s->lost ||
		    (c->stop_all && __atomic_load_n(c->stop_all, __ATOMIC_RELAXED)))
			break;
		now = clock_mono_ns();
		if (now >= deadline)
			break;
		timeout = (int)((deadline - now + 999999) / 1000000);
		/* Late stops to reap: a SIGCHLD another tracer reads wakes us too. */
		chldwake_waiting(s->wakeslot, s->late > 0);
		if (poll(pfd, 5, timeout) < 0 && errno != EINTR)
			break;
		/* A held thread may be an exiting one whose exit waits on our reaping. */
		if (pfd[1].revents || pfd[2].revents || pfd[3].revents || pfd[4].revents || s->late)
			session_poll(s);
		if (pfd[0].revents && read(tfd, &exp, sizeof(exp)) == (ssize_t)sizeof(exp)) {
			r->ticks_missed += exp - 1;
			if (sampler_tick(sm, s, tids, cap) < 0)
				break;
		}
		now = clock_mono_ns();
		if (sm->mv.rescan_due || now - last_rescan >= RESCAN_NS) {
			/* A stat says whether the count changed; the whole list is read rarely. */
			if (sm->mv.rescan_due || session_count_changed(s) ||
			    now - last_forced >= RESCAN_FORCE_NS) {
				session_rescan(s);
				last_forced = now;
			}
			last_rescan = now;
			sm->mv.rescan_due = 0;
		}
	}
	close(tfd);
}

void *sampler_main(void *arg)
{
	struct sampler *sm = arg;
	const struct sampler_cfg *c = &sm->cfg;
	struct sampler_results *r = &sm->res;
	struct session s;
	pid_t *tids = NULL;
	uint32_t cap = 0;

	if (session_init(&s, c->pid, c->stack_cap) < 0) {
		r->attach_errno = EINVAL;
		goto out;
	}
	sampler_setup(sm, &s);
	/*
	 * The process clock's start is read just before the threads' (the
	 * first scan): what ran between the two would be taken for
	 * short-lived threads' CPU. Read before the wait-cost measurement, a
	 * saturated crowd put a sizeable share of its CPU there.
	 */
	r->start_real_ns = clock_real_ns();
	r->start_mono_ns = clock_mono_ns();
	moved_init(&sm->mv, c->pid, c->policy->cold_slack_ns);
	/*
	 * The wait costs are measured beside the sampling (waitcost_start):
	 * on CPUs saturated by the target, waiting for them held the first
	 * tick back by most of a second. Until they are known the threads'
	 * slices wait (moved.c).
	 */
	if (c->policy->flags & POLICY_WAITS)
		sm->mv.cost_pending = !waitcost_ready(&sm->mv.wait_cost_ns, &sm->mv.timer_cost_ns);
	if (session_start(&s) < 0) {
		r->attach_errno = errno ? errno : ESRCH;
		goto out_session;
	}
	if (c->policy->flags & POLICY_ONCE) {
		sampler_tick(sm, &s, &tids, &cap);
		session_await_deferred(&s, SESSION_STRAGGLER_MS * 1000000ull);
	} else {
		sampler_clock(sm, &s, &tids, &cap);
	}
	session_poll(&s);
	sampler_finish(sm, &s);
out_session:
	session_release(&s);
out:
	/* The root's end is the capture's: its descendants' tracers stop too. */
	if (c->root && c->stop_all)
		__atomic_store_n(c->stop_all, 1, __ATOMIC_RELAXED);
	free(tids);
	if (c->tick_hook)
		c->tick_hook(c->tick_ctx); /* a read after every snapshot */
	queue_close(c->queue);
	/* Returning ends the thread, and with it every ptrace attachment. */
	return NULL;
}

void sampler_results_add(struct sampler_results *into, const struct sampler_results *from)
{
	into->samples += from->samples;
	into->lost += from->lost;
	into->cpu_unattributed_ns += from->cpu_unattributed_ns;
	into->cpu_process_ns += from->cpu_process_ns;
	into->cpu_short_ns += from->cpu_short_ns;
	into->cpu_waits_ns += from->cpu_waits_ns;
	into->weighed_ns += from->weighed_ns;
	into->found_asleep += from->found_asleep;
	into->threads_read += from->threads_read;
	session_stats_add(&into->stats, &from->stats);
	into->pause_p50_ns = session_stats_percentile(&into->stats, 50);
	into->pause_p99_ns = session_stats_percentile(&into->stats, 99);
}
