/*
 * offcpusrc.c — the off-CPU source (-t offcpu): every time a thread of the
 * target leaves a CPU and comes back, one sample weighing the time it was
 * off, at the stack it left with (user and kernel), labelled with why it
 * left (sleeping, disk wait, preempted) and who woke it. Built on the
 * kernel's own events, not on polling, and nothing is stopped or traced:
 *  - per thread (task scope, inherited by new threads): a sample at each
 *    switch-out (the sched_switch tracepoint, whose prev_state says why;
 *    without tracefs the context-switches software event), and in a ring
 *    of their own the switch records that time each switch in and out
 *    (context_switch), so that a full stack ring loses stacks, never time;
 *  - CPU-wide where allowed (root, CAP_PERFMON): the sched_waking
 *    tracepoint, taken in the waker's context, filtered in the kernel to
 *    the target's threads.
 * offwaits.c turns the events into waits; offread.c reads the rings,
 * offemit.c makes each wait a sample; this file opens the events and runs
 * the window (offcap.h: the state they share).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/capture/target.h"
#include "attach/perf/perfaccess.h"
#include "attach/source/capture.h"
#include "attach/source/offcap.h"
#include "attach/source/record.h"
#include "attach/source/source.h"
#include "common/err.h"
#include "common/hurry.h"
#include "common/proc.h"
#include "model/profile.h"
#include "unwind/kallsyms.h"

#define DRAIN_MS 50            /* read the rings at least this often */
#define ORDER_SLACK_NS 2000000ull /* events this recent may still be on their way to a ring */
#define STACK_RING (4u << 20)  /* per CPU: switch-out samples */
#define TIMES_RING (1u << 20)  /* per CPU: switch records */
#define WAKE_RING (2u << 20)   /* per CPU: wake-ups */
#define PICK_RING (1u << 20)   /* per CPU: our threads' picks */
#define READER_NICE -10
/*
 * Stack bytes a switch-out sample copies unless --stack-size says: a
 * thread that switches tens of thousands of times a second would have
 * the kernel copy 64 KiB at each (gigabytes a second, and the rings
 * full); a deeper stack is read on from memory (stackhole.h).
 */
#define STACK_COPY (8u << 10)

/* Open the three event sets. 0, or an EXIT_* code after saying why. */
static int off_open(struct offcap *o, const struct perf_access *a)
{
	const struct capture_req *q = o->q;
	struct perf_cfg cfg;
	char why[200];
	int kernel_names = q->kernel && kallsyms_readable(); /* names read while sampling */

	memset(&cfg, 0, sizeof(cfg));
	cfg.pid = o->pid;
	cfg.scope = PERF_SCOPE_TASK;
	cfg.event = PERF_EVENT_SWITCH_OUT;
	cfg.kernel_chain = kernel_names;
	cfg.tp_id = tracefs_event_id("sched", "sched_switch");
	if (cfg.tp_id && tracefs_field("sched", "sched_switch", "prev_state", &o->prev_state) < 0)
		cfg.tp_id = 0;
	if (cfg.tp_id && tracefs_field("sched", "sched_switch", "next_pid", &o->next_pid) < 0)
		memset(&o->next_pid, 0, sizeof(o->next_pid));
	cfg.stack_bytes = q->stack_cap > PERF_STACK_MAX ? PERF_STACK_MAX : (uint32_t)q->stack_cap;
	if (!q->stack_cap_given && cfg.stack_bytes > STACK_COPY)
		cfg.stack_bytes = STACK_COPY;
	cfg.ring_bytes = STACK_RING;
	o->st->tracepoint = cfg.tp_id != 0;
	if (perf_events_init(&o->stacks, &cfg) < 0)
		goto refused;
	o->st->threads_opened = o->stacks.threads;
	o->st->stack_bytes = o->stacks.cfg.stack_bytes;
	cfg.event = PERF_EVENT_SWITCH_TIMES;
	cfg.tp_id = 0;
	cfg.ring_bytes = TIMES_RING;
	if (perf_events_init(&o->times, &cfg) < 0)
		goto refused;
	if (a->scope != PERF_SCOPE_CPU || !(cfg.tp_id = tracefs_event_id("sched", "sched_waking")) ||
	    tracefs_field("sched", "sched_waking", "pid", &o->wakee) < 0)
		return 0;
	cfg.scope = PERF_SCOPE_CPU;
	cfg.pid = -1;
	cfg.event = PERF_EVENT_WAKING;
	cfg.ring_bytes = WAKE_RING;
	o->have_wakes = perf_events_init(&o->wakes, &cfg) == 0;
	/*
	 * Each of our threads' picks, whoever it follows on its CPU: the end
	 * of its wait before the switching (a thread of another process has
	 * no switch-out sample of ours to tell it). Without, the switch-in
	 * record, after the switching (offwaits.h).
	 */
	cfg.event = PERF_EVENT_PICKS;
	cfg.kernel_chain = 0;
	cfg.ring_bytes = PICK_RING;
	if (o->next_pid.size && (cfg.tp_id = tracefs_event_id("sched", "sched_switch")))
		o->have_picks = perf_events_init(&o->picks, &cfg) == 0;
	offread_filter(o);
	return 0;
refused:
	if (errno == ESRCH || target_exited(o->pid))
		return target_gone_before(o->pid, q->t->comm);
	perf_access_refusal(a, o->stacks.failed ? o->stacks.failed : o->times.failed, errno, why,
			    sizeof(why));
	error("cannot profile %d (%s) off the CPU: %s", (int)o->pid, q->t->comm, why);
	return EXIT_ATTACH;
}

/* Hand the rings' records to offwaits, then the waits before now (less the slack) to the profile. */
static void off_drain(struct offcap *o, int last)
{
	uint64_t now = clock_mono_ns();

	perf_events_drain(&o->times, offread_switch_record, o);
	perf_events_drain(&o->stacks, offread_switch_sample, o);
	if (o->have_wakes)
		perf_events_drain(&o->wakes, offread_wake, o);
	if (o->have_picks)
		perf_events_drain(&o->picks, offread_pick, o);
	if (!last)
		offwaits_run(&o->w, now > ORDER_SLACK_NS ? now - ORDER_SLACK_NS : 0);
}

/* The window: the rings read as they fill, until the deadline, a stop signal or the target's end. */
static void off_window(struct offcap *o, struct capture_report *rep)
{
	const struct capture_req *q = o->q;
	struct pollfd pfd[2 + 4 * 256];
	struct perf_events *sets[4] = { &o->times, &o->stacks, &o->wakes, &o->picks };
	uint64_t now, deadline = o->t0 + q->duration_ns;
	int i, s, n = 0, sigfd, pidfd;

	sigfd = capture_stop_open();
	pidfd = (int)syscall(SYS_pidfd_open, o->pid, 0);
	pfd[n].fd = sigfd;
	pfd[n++].events = POLLIN;
	pfd[n].fd = pidfd;
	pfd[n++].events = POLLIN;
	for (s = 0; s < 4; s++)
		for (i = 0; i < sets[s]->nrings && n < (int)(sizeof(pfd) / sizeof(pfd[0])); i++) {
			pfd[n].fd = sets[s]->rings[i].fd;
			pfd[n++].events = POLLIN;
		}
	while ((now = clock_mono_ns()) < deadline) {
		int ms = (int)((deadline - now + 999999) / 1000000);

		if (poll(pfd, (nfds_t)n, ms > DRAIN_MS ? DRAIN_MS : ms) < 0 && errno != EINTR)
			break;
		off_drain(o, 0);
		if (o->refilter)
			offread_filter(o);
		if ((pfd[0].revents & POLLIN) && (rep->stop_signal = capture_stop_take(sigfd)))
			break;
		if ((pidfd >= 0 && (pfd[1].revents & POLLIN)) || (pidfd < 0 && target_exited(o->pid))) {
			rep->gone = 1;
			break;
		}
		if (q->progress)
			q->progress(clock_mono_ns() - o->t0, q->duration_ns, o->w.st.waits,
				    tnames_count(&o->names), 0);
	}
	if (q->progress)
		q->progress(0, 0, 0, 0, 1);
	capture_stop_close(sigfd);
	if (pidfd >= 0)
		close(pidfd);
}

static void off_release(struct offcap *o)
{
	perf_events_release(&o->stacks);
	perf_events_release(&o->times);
	perf_events_release(&o->wakes);
	perf_events_release(&o->picks);
	offwaits_release(&o->w);
	recorder_free(o->rec);
	stackhole_release(&o->hole);
	free(o->copy);
	tnames_release(&o->names);
	u64map_release(&o->cpu0);
	u64map_release(&o->short_ns);
	u64map_release(&o->short_n);
	u64map_release(&o->filtered);
}

/* Why there are no wakers, or NULL: for the note at the end. */
static const char *off_no_wakers(const struct offcap *o, const struct perf_access *a)
{
	if (o->have_wakes)
		return NULL;
	if (a->scope != PERF_SCOPE_CPU)
		return "they need CPU-wide events (root, CAP_PERFMON or kernel.perf_event_paranoid <= 0)";
	return "they need the sched_waking tracepoint, and tracefs is not mounted "
	       "(mount -t tracefs nodev /sys/kernel/tracing)";
}

static int capture_offcpu(const struct capture_req *q, struct profile **out,
			  struct capture_report *rep)
{
	struct capture cx;
	struct offcap o;
	struct perf_access a;
	const char *nowake;
	uint64_t t1;
	int code;

	memset(&o, 0, sizeof(o));
	capture_open(&cx, q, rep, out);
	o.q = q;
	o.pid = q->t->pid;
	o.st = &rep->off;
	tnames_init(&o.names, o.pid, q->t->comm);
	u64map_init(&o.cpu0, PRESENT_MAX);
	u64map_init(&o.short_ns, TNAMES_MAX);
	u64map_init(&o.short_n, TNAMES_MAX);
	u64map_init(&o.filtered, FILTER_TIDS * 2);
	offwaits_init(&o.w, 0, offemit_wait, &o);
	o.copy = malloc(q->stack_cap);
	perf_access_probe(&a);
	if (!a.scope || a.exclude_kernel) {
		error("cannot profile %d (%s) off the CPU: the switch events are the kernel's, and %s",
		      (int)o.pid, q->t->comm, a.scope ? "kernel.perf_event_paranoid is 2 (run as "
		      "root, or with CAP_PERFMON, or set it to 1)" : a.why);
		code = EXIT_ATTACH;
		goto out;
	}
	if (hurry_nice() > READER_NICE)
		capture_nice(&cx, READER_NICE);
	if ((code = capture_profile(&cx, 1)) != EXIT_OK)
		goto out;
	if (!(o.rec = recorder_new(cx.prof, o.pid, RECORD_MAX_DEPTH))) {
		code = capture_map_failed(q->t, errno);
		goto out;
	}
	if (stackhole_init(&o.hole, o.pid, q->stack_cap) == 0)
		recorder_add_refill(o.rec, RECORDER_REFILL_ANY, stackhole_complete, &o.hole);
	if ((code = off_open(&o, &a)) != EXIT_OK)
		goto out;
	/*
	 * The stacks of the threads asleep now first (reading them takes a
	 * while): the window begins when the events are enabled, and the
	 * capture line says so just before.
	 */
	offemit_present(&o);
	target_say_capture(o.pid, q->t->comm, 0, q->what, q->duration_ns, 0,
			   o.have_wakes ? "switch events, wake-ups" : "switch events");
	rep->start_real_ns = clock_real_ns();
	o.t0 = clock_mono_ns();
	offwaits_start(&o.w, o.t0);
	/*
	 * Wake-ups, switch records, then switch-out samples; off in the same
	 * order. A switch in the gap at the start has its record and not its
	 * sample: a wait with its state and no stack. The other way round, a
	 * sample without its record, a preemption read "waiting"; at the end
	 * that gap is the wait's last microseconds.
	 */
	if (o.have_wakes)
		perf_events_enable(&o.wakes);
	if (o.have_picks)
		perf_events_enable(&o.picks);
	perf_events_enable(&o.times);
	perf_events_enable(&o.stacks);
	off_window(&o, rep);
	perf_events_disable(&o.times);
	perf_events_disable(&o.stacks);
	if (o.have_wakes)
		perf_events_disable(&o.wakes);
	if (o.have_picks)
		perf_events_disable(&o.picks);
	t1 = clock_mono_ns();
	capture_nice_end(&cx);
	off_drain(&o, 1);
	offwaits_end(&o.w, t1);
	if (!rep->gone)
		offemit_unswitched(&o, t1 - o.t0);
	offemit_shorts(&o);
	rep->off.waits = o.w.st.waits;
	rep->off.no_stack = o.w.st.no_stack;
	rep->off.woken = o.w.st.woken;
	rep->off.dropped = o.w.st.dropped;
	rep->off.unpicked = o.have_picks ? o.w.st.at_switch_in : 0;
	rep->offcpu = 1;
	rep->duration_ns = t1 - o.t0;
	rep->samples = o.w.st.waits;
	rep->threads = tnames_count(&o.names);
	nowake = off_no_wakers(&o, &a);
	if (nowake && (q->labels & LABEL_WAKER) && !q->quiet)
		note("no wakers: %s", nowake);
	if (!o.st->tracepoint && !q->quiet)
		note("sleeping and disk wait are one state, \"waiting\": telling them apart needs "
		     "the sched_switch tracepoint (root, and tracefs mounted)");
	if ((o.st->lost_switches || o.w.st.dropped) && !q->quiet)
		warning("%llu switch records lost: off-CPU totals are short",
			(unsigned long long)(o.st->lost_switches + o.w.st.dropped));
	/*
	 * Some guests' kernels trace no sched_switch when an idle CPU takes a
	 * thread (the idle task's switches are missing altogether): those
	 * waits end after the switching, which the thread's clocks count as
	 * its CPU time (doc/offcpu.md).
	 */
	if (o.have_picks && rep->off.unpicked * 100 > o.w.st.waits && !q->quiet)
		note("%llu of %llu waits end at their switch-in record, after the switching: the "
		     "kernel traced no sched_switch when they were picked (an idle CPU of some "
		     "virtual machines); their times include the switch",
		     (unsigned long long)rep->off.unpicked, (unsigned long long)o.w.st.waits);
	if (o.st->lost_stacks && !q->quiet)
		warning("%llu switch-out stacks lost to full rings: %llu waits kept with their times "
			"under \"[not captured: switch-out stack lost]\" (a smaller --stack-size copies less)",
			(unsigned long long)o.st->lost_stacks, (unsigned long long)o.w.st.no_stack);
	recorder_lines(o.rec, q->debug, q->line_cache);
	rep->rec = *recorder_stats(o.rec);
	code = capture_close(&cx, o.pid, q->t->comm, 0, out);
out:
	off_release(&o);
	capture_release(&cx);
	return code;
}

const struct source source_offcpu = { "offcpu", capture_offcpu, SOURCE_WAITS };
