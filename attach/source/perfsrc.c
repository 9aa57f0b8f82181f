/*
 * perfsrc.c — the perf source: CPU profiles from the kernel's own sampling
 * (attach/perf/: a clock event per CPU, each sample the interrupted
 * thread's user registers and a copy of its user stack, in a ring).
 * Nothing is stopped, traced or signalled. Each sample becomes a thread
 * image and goes through the same recorder as a ptrace snapshot; it
 * weighs the period's nanoseconds of CPU. At the end each thread's
 * samples are scaled to its CPU clock, those of threads that ended to the
 * process's CPU the live ones do not explain, and CPU that no sample
 * carries gets a marker ("[short-lived threads]"), so the totals are the
 * clocks' (pcap_settle). A sample carries the program's own labels
 * (labelsrc.h) as in force at the kernel's timestamp.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/ptrace/snapshot.h"
#include "attach/capture/target.h"
#include "attach/perf/altstack.h"
#include "attach/perf/stackhole.h"
#include "attach/perf/perfaccess.h"
#include "attach/perf/events.h"
#include "attach/perf/kchain.h"
#include "attach/source/capture.h"
#include "attach/source/children.h"
#include "attach/source/labelsrc.h"
#include "attach/source/perfsrc.h"
#include "attach/source/perfproc.h"
#include "attach/source/record.h"
#include "attach/source/settle.h"
#include "attach/source/source.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/hurry.h"
#include "common/waitcost.h"
#include "common/u64map.h"
#include "model/profile.h"
#include "unwind/kallsyms.h"

#define DRAIN_MS 100            /* read the rings at least this often */
#define DRAIN_MIN_MS 2          /* ... and no more often than this when they fill fast */
#define PROGRESS_NS 250000000ull
#define ACCESS_CHECK_NS 100000000ull /* ask the ptrace question again this often */
#define RING_SECONDS 0.5        /* a ring holds about this long of one CPU's samples */
#define READER_NICE -10         /* the window's priority, where we may raise it */
/*
 * The event's period is 1/HZ stretched by this: a period shared with no
 * timer or tick (1, 2, 4, 10 ms), so that work a timer drives is not
 * sampled at one phase of it (a handler run by a CPU-time timer got far
 * fewer than its share of its thread's samples at exactly 10 ms; perf's
 * users take 99 Hz for the same reason). 10 ms becomes 10.373 ms: against
 * a 4 ms tick each sample moves 0.593 of the way round, near the golden
 * ratio's 0.618, which spreads the phases evenly soonest.
 */
#define PERIOD_STRETCH 1.0373
/*
 * CPU scope: after each pass over the rings the period is drawn afresh,
 * uniform within this fraction either side of the stretched one. A
 * cpu-clock event fires on a fixed grid, and a target woken by its own
 * timer is woken early by ours whenever ours falls within its timer's
 * slack (50 us by default): its loop then locks to our grid and every
 * sample lands at one phase of it, and a polling loop's handler read
 * further from its own measurement than perf record's per-thread
 * task-clock did. Each sample weighs its own period.
 */
#define PERIOD_JITTER 0.35
#define RING_MIN (256u << 10)
#define RING_MAX (8u << 20)
#define SHORT_MIN_NS 1000000ull /* less unexplained CPU than this (or 0.5%) is read skew */


/* CPU scope: a new period for the next pass (PERIOD_JITTER). */
static void pcap_jitter(struct pcap *c)
{
	uint64_t x = c->jitter;
	double u;

	if (!x)
		return;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->jitter = x;
	u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
	perf_events_set_period(c->ev, (uint64_t)((double)c->ev->cfg.period_ns *
						  (1.0 - PERIOD_JITTER + 2.0 * PERIOD_JITTER * u)));
}

/* tid's name (tnames.h). */
static const char *pcap_name(struct pcap *c, uint32_t tid)
{
	return tnames_get(&c->names, tid);
}

/* The labels the request asks for (l has CAPTURE_THREAD_LABELS). Returns how many. */
static size_t pcap_labels(struct pcap *c, uint32_t tid, struct profile_label_in *l)
{
	return capture_thread_labels(c->labels, pcap_name(c, tid), (pid_t)tid, c->pid, c->comm,
				     l);
}

/* The labels of a marker of no thread: its process's only (l has CAPTURE_THREAD_LABELS). */
static size_t pcap_process_labels(const struct pcap *c, struct profile_label_in *l)
{
	return capture_thread_labels(c->labels & ~(LABEL_TID | LABEL_THREAD), NULL, 0, c->pid,
				     c->comm, l);
}

/* The kernel part of s's call chain, named (kchain.h), for the recorder. */
static void pcap_kernel(struct pcap *c, const struct perf_sample *s)
{
	const char *names[PERF_CHAIN_MAX];
	unsigned n = kchain_names(s, names, PERF_CHAIN_MAX);

	c->st->kernel_chains += n > 0;
	recorder_kernel(c->rec, names, n);
}

/* A sample of c's process (pcap_record found which). */
static void pcap_sample(struct pcap *c, const struct perf_sample *s)
{
	struct profile_label_in l[CAPTURE_THREAD_LABELS + LABELSRC_MAX];
	struct labelsrc_text text;
	struct thread_image img;
	uint64_t w;
	int64_t v[2];
	size_t nl;

	if (!c->rec && pcap_ready(c) < 0) {
		c->st->others++; /* a process we may not read: not ours to profile */
		return;
	}
	w = s->period ? s->period : c->ev->cfg.period_ns;
	c->st->samples++;
	c->st->cpu_sampled_ns += w;
	v[0] = 1;
	v[1] = (int64_t)w;
	if (s->tid == PERF_TID_GONE) {
		/*
		 * A thread past the end of its exit: the kernel no longer
		 * knows its id (and its memory is gone: no user registers).
		 * The CPU of the threads that ended, as a sample of none.
		 */
		c->st->exiting++;
		c->exiting_ns += w;
		recorder_marker_sample(c->rec, "[not captured: thread exiting]", v, l,
				       pcap_process_labels(c, l));
		return;
	}
	settle_add(&c->settle, s->tid, w);
	pcap_name(c, s->tid); /* every sampled thread is named (and counted) */
	nl = pcap_labels(c, s->tid, l);
	nl += labelsrc_at(c->lab, s->tid, s->time, l + nl, LABELSRC_MAX, &text);
	if (ring_sample_image(s, c->ev->layout.regs_mask, &img) < 0) {
		c->st->no_regs++;
		recorder_marker_sample(c->rec, "[not captured: no user registers]", v, l, nl);
		return;
	}
	if (s->chain)
		pcap_kernel(c, s);
	recorder_add(c->rec, s->tid, &img, v, l, nl);
}

/*
 * pid exec'd at t (0: unknown): the member running its old program takes
 * no sample from then on; a descendant's new program becomes a member
 * from then on (the root's exec ends the capture). One exec is taken once
 * (the scan before a drain, then the drain, see it both).
 */
static void pfam_exec(struct pfam *f, uint32_t pid, uint64_t t)
{
	struct pcap *c = pfam_find(f, pid, t ? t : UINT64_MAX);

	if (!c || (t && c->since == t))
		return;
	c->execed = 1;
	c->exec_time = t;
	if (c != f->m[0] && t && !pfam_adopt_one(f, c->pid, NULL, t) && errno != ENOSPC)
		f->adopt_failures++;
}

/* --children: the execs in the rings, before their samples are drained (from any ring). */
static void pfam_scan_exec(void *ctx, const unsigned char *rec, size_t len)
{
	struct pfam *f = ctx;
	uint32_t pid, tid;
	uint64_t t;
	char name[16];
	int exec;

	if (ring_record_type(rec, len) == PERF_REC_COMM &&
	    ring_parse_comm(rec, len, &pid, &tid, name, &exec) == 0 && exec &&
	    ring_record_time(&f->ev.layout, rec, len, &t) == 0 && t)
		pfam_exec(f, pid, t);
}

static void pcap_record(void *ctx, const unsigned char *rec, size_t len)
{
	struct pfam *f = ctx;
	struct pcap *root = f->m[0], *c;
	struct perf_sample s;
	uint32_t pid, tid;
	uint64_t n, t;
	char name[16];
	int exec;

	switch (ring_record_type(rec, len)) {
	case PERF_REC_SAMPLE:
		if (ring_parse_sample(&f->ev.layout, rec, len, &s) < 0) {
			root->st->corrupt++;
			break;
		}
		root->all_samples++;
		if ((c = pfam_find(f, s.pid, s.time)))
			pcap_sample(c, &s);
		else
			root->st->others++;
		break;
	case PERF_REC_LOST:
		if (ring_parse_lost(rec, len, &n) == 0)
			root->st->lost += n;
		break;
	case PERF_REC_COMM:
		if (ring_parse_comm(rec, len, &pid, &tid, name, &exec) < 0)
			break;
		if (ring_record_time(&f->ev.layout, rec, len, &t) < 0)
			t = 0;
		if (exec) {
			pfam_exec(f, pid, t);
		} else if ((c = pfam_find(f, pid, t ? t : UINT64_MAX))) {
			tnames_rename(&c->names, tid, name);
		}
		break;
	case PERF_REC_THROTTLE:
		root->st->throttled++;
		break;
	default:
		break;
	}
}

/*
 * Per-thread events (task scope) count a thread's CPU only while it is
 * switched in, and at perf_event_paranoid 2 sample user mode only: what
 * its clock shows beyond its samples' periods is the kernel switching it
 * in and out (and, user mode only, all its kernel time), never spread
 * over its user-mode samples. Scaled over them, an event loop's handler
 * got more of its thread than the thread itself measured, the more so at
 * paranoid 2. Each (thread, CPU) event ends with less than a period not
 * sampled: half a period per CPU is left to the scaling, and a gap under
 * one period per CPU is all scaled. CPU-wide events (no such gap: a tick
 * lands on whoever runs when it fires) and captures that lost records are
 * left to the scaling.
 */
static uint64_t pcap_unseen(const struct pcap *c, uint64_t used, uint64_t got)
{
	uint64_t tail = c->ev->cfg.period_ns * (uint64_t)(c->ev->nrings > 0 ? c->ev->nrings : 1);

	if (c->ev->cfg.scope != PERF_SCOPE_TASK || c->st->lost || c->st->throttled ||
	    used <= got + tail)
		return 0;
	return used - got - tail / 2;
}

/*
 * CPU-wide events: a tick due while the thread switches (interrupts off)
 * lands when interrupts are on again, not on this thread's switch, and
 * scaled to its clock the switch's CPU went to the code it runs on
 * waking; this is that CPU (waitcost.h): what its clock shows beyond its
 * samples' periods (used - got), up to a timer sleep's cost for each time
 * it was put on a CPU (slices0: at the start; a thread not in it was
 * born during the window). The bound is the clock's: where the CPU is
 * busy, a tick due in the switch lands on the next thread and the loop's
 * own samples are fair (without it, two loops beside a busy thread read
 * low). The cap is the timer's: on a PVM guest, where arming and expiring
 * a timer runs with interrupts off, an event loop's sleeps cost it CPU
 * that no tick saw, and charged at a futex's cost the handler read high
 * against the thread's own measurement. A preemption costs a switch, not
 * a timer: the slices' voluntary share (the thread's life's, from its
 * status, read only here) takes the timer's cost, the rest the switch's
 * (two loops beside a busy thread, often preempted: one read low, its
 * waits high). The same with kernel call chains: no tick lands in the
 * switch either way, so no kernel frame can stand for its CPU, and scaled
 * over the samples it went to an event loop's handler again.
 */
static uint64_t pcap_waits(const struct pcap *c, const struct u64map *slices0, uint32_t tid,
			   uint64_t used, uint64_t got)
{
	uint64_t s0 = 0, s1, cost, vol, invol;

	if (c->ev->cfg.scope == PERF_SCOPE_TASK || used <= got ||
	    !u64map_get(&c->settle.slices, tid, &s1))
		return 0;
	u64map_get(slices0, tid, &s0);
	cost = c->wait_cost_ns;
	if (c->timer_cost_ns > cost && proc_task_switches(c->pid, (pid_t)tid, &vol, &invol) == 0 &&
	    vol + invol)
		cost += (c->timer_cost_ns - cost) * vol / (vol + invol);
	return waitcost_of(s1 > s0 ? s1 - s0 : 0, cost, used - got);
}

/* The frame of a thread's CPU its per-thread events did not see. */
static const char *pcap_unseen_frame(const struct pcap *c)
{
	return c->ev->cfg.exclude_kernel ? "[kernel mode: not sampled at perf_event_paranoid 2]"
					: WAITCOST_FRAME;
}

/* A marker of one live thread's CPU, recorded once the samples are scaled. */
struct pcap_marker {
	uint32_t tid;
	const char *frame;
	uint64_t ns;
};

/*
 * Record the markers kept by pcap_settle. After settle_apply: a marker
 * carries its thread's tid label, and recorded before it was scaled with
 * the thread's samples (a sleeping thread's switching frame came out
 * several times its estimate, the profile well above the process clock).
 */
static void pcap_markers_record(struct pcap *c, const struct pcap_marker *m, size_t n)
{
	struct profile_label_in l[CAPTURE_THREAD_LABELS];
	int64_t v[2];
	size_t i;

	for (i = 0; i < n; i++) {
		v[0] = 0;
		v[1] = (int64_t)m[i].ns;
		recorder_marker_sample(c->rec, m[i].frame, v, l, pcap_labels(c, m[i].tid, l));
	}
}

/*
 * At the end: each live thread's samples are scaled so that they add up
 * to its CPU clock over the window, and the samples of threads that ended
 * to the process's CPU the live threads do not explain. The period's
 * nanoseconds are an estimate (the clock interrupt waits while interrupts
 * are off, and lands on whoever runs next: a thread passing tokens over
 * pipes got fewer samples than its share of the CPU); the clocks are exact,
 * so totals per thread are too, and the samples say only where within a
 * thread the CPU went, as with the ptrace sampler. A live thread with CPU
 * and no sample, and ended threads none of which was sampled (shorter
 * than a period, in task scope), get a marker each. cpu0 holds the
 * clocks when the events were enabled; proc_ns the process's CPU since.
 */
static void pcap_settle(struct pcap *c, struct profile *prof, const struct u64map *cpu0,
			const struct u64map *slices0, uint64_t proc_ns)
{
	struct pcap_marker *m;
	uint64_t live = 0, c0, got, used, ended_w, ended, floor, unseen;
	int64_t v[2];
	double f;
	size_t i, nm = 0;

	/* Idle threads are read only when the sampled ones leave CPU unexplained. */
	floor = proc_ns / 200 > SHORT_MIN_NS ? proc_ns / 200 : SHORT_MIN_NS;
	if (proc_ns >= settle_read_sampled(&c->settle, c->pid, cpu0) + floor)
		settle_read_live(&c->settle, c->pid);
	/* At most two markers a live thread (the live map holds at most SETTLE_MAX). */
	m = calloc(2 * c->settle.live.nslots + 1, sizeof(*m));
	for (i = 0; i < c->settle.live.nslots; i++) {
		struct u64map_slot *sl = &c->settle.live.slots[i];
		uint32_t tid = (uint32_t)sl->key;

		if (!sl->used)
			continue;
		c0 = 0; /* born during the capture: all its CPU is the window's */
		u64map_get(cpu0, sl->key, &c0);
		used = sl->value > c0 ? sl->value - c0 : 0;
		live += used;
		got = settle_weight(&c->settle, tid);
		if (got) {
			unseen = pcap_unseen(c, used, got);
			if (unseen && m) {
				m[nm++] = (struct pcap_marker){ tid, pcap_unseen_frame(c), unseen };
				c->st->cpu_unseen_ns += unseen;
				used -= unseen;
			}
			unseen = pcap_waits(c, slices0, tid, used, got);
			if (unseen && m) {
				m[nm++] = (struct pcap_marker){ tid, WAITCOST_FRAME, unseen };
				c->st->cpu_waits_ns += unseen;
				used -= unseen;
			}
			f = (double)used / (double)got;
			settle_set(&c->settle, tid, f);
			c->st->scale_min = c->st->scale_min && c->st->scale_min < f ? c->st->scale_min : f;
			c->st->scale_max = c->st->scale_max > f ? c->st->scale_max : f;
			c->st->threads_scaled++;
		} else if (used && m) {
			m[nm++] = (struct pcap_marker){ tid, "[not captured: no sample of this thread]", used };
			c->st->cpu_unsampled_ns += used;
		}
	}
	ended_w = settle_ended_weight(&c->settle);
	/* Less what the exiting samples' marker already carries, unscaled. */
	ended = proc_ns > live + c->exiting_ns ? proc_ns - live - c->exiting_ns : 0;
	c->st->cpu_ended_ns += ended;
	c->settle.ended = ended_w ? (double)ended / (double)ended_w : 1.0;
	settle_apply(&c->settle, prof, 1);
	c->scaled = 1;
	pcap_markers_record(c, m, nm);
	free(m);
	/* Threads that ended with CPU and no sample: one frame, unless it is read skew. */
	if (!ended_w && ended >= floor) {
		struct profile_label_in l[CAPTURE_THREAD_LABELS];

		v[0] = 0;
		v[1] = (int64_t)ended;
		/* Of no thread: its process's labels only (--children). */
		recorder_marker_sample(c->rec, SHORT_LIVED_FRAME, v, l, pcap_process_labels(c, l));
		c->st->cpu_short_ns += ended;
	}
}

/*
 * Samples the kernel dropped (a ring was full), when the clocks could not
 * settle the totals: their CPU is real, their stacks unknown. In CPU
 * scope some were other processes': the target's share of what was seen
 * is the estimate of its share of what was lost.
 */
static void pcap_lost_marker(struct pcap *c)
{
	int64_t v[2];

	if (!c->st->lost || !c->all_samples)
		return;
	v[0] = 0;
	v[1] = (int64_t)((double)c->st->lost * (double)c->ev->cfg.period_ns *
			 (double)c->st->samples / (double)c->all_samples);
	if (v[1] > 0)
		recorder_marker_sample(c->rec, "[not captured: ring buffer full]", v, NULL, 0);
}

/* The ring size for hz samples a second per CPU of stack_bytes each. */
static size_t ring_bytes_for(uint64_t period_ns, uint32_t stack_bytes)
{
	double b = 1e9 / (double)period_ns * RING_SECONDS * (stack_bytes + 512.0);

	return b < RING_MIN ? RING_MIN : b > RING_MAX ? RING_MAX : (size_t)b;
}

/*
 * Whether the right to look at pid is gone (it made itself non-dumpable,
 * or changed credentials): the events, once open, would go on sampling,
 * so the capture asks the kernel the ptrace question again, as the ptrace
 * sampler does when a seize is refused (/proc/PID/syscall is one read).
 */
static int pcap_access_lost(pid_t pid)
{
	char path[64], buf[256];

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	return proc_read(path, buf, sizeof(buf)) < 0 && (errno == EACCES || errno == EPERM);
}

/*
 * How often to read the rings besides their wake-ups: a quarter of the
 * time one fills at a sample per period, within [DRAIN_MIN_MS, DRAIN_MS]
 * (a small ring, where locked memory is short, fills in milliseconds at
 * 1000 Hz, and its wake-up mark was set for the size asked for).
 */
static int pcap_drain_ms(const struct perf_events *ev)
{
	double fill_ms = (double)ev->ring_bytes / (ev->cfg.stack_bytes + 512.0) *
			 (double)ev->cfg.period_ns / 1e6;
	int ms = (int)(fill_ms / 4);

	return ms < DRAIN_MIN_MS ? DRAIN_MIN_MS : ms > DRAIN_MS ? DRAIN_MS : ms;
}

/* Drain the rings; with --children, the execs in them first. */
static void pfam_drain(struct pfam *f)
{
	if (f->q->children)
		perf_events_scan(&f->ev, pfam_scan_exec, f);
	perf_events_drain(&f->ev, pcap_record, f);
}

/* The next read of the members' label rings is due within this (-1: none). */
static int pfam_label_ms(struct pfam *f)
{
	int i, ms, best = -1;

	for (i = 0; i < f->n; i++)
		if ((ms = labelsrc_poll(f->m[i]->lab)) >= 0 && (best < 0 || ms < best))
			best = ms;
	return best;
}

/* Read every member's label changes: after every sample about to be drained. */
static void pfam_labels_sync(struct pfam *f)
{
	int i;

	for (i = 0; i < f->n; i++)
		labelsrc_sync(f->m[i]->lab);
}

/* Threads sampled in all the family's processes. */
static uint64_t pfam_threads(const struct pfam *f)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < f->n; i++)
		n += tnames_count(&f->m[i]->names);
	return n;
}

/*
 * The window: drain the rings when they fill, at least every
 * pcap_drain_ms(), until the deadline, a stop signal, the root's exit
 * or exec; with --children, adopt new descendants as it goes.
 */
static void pcap_window(struct pfam *f, struct capture_report *rep, uint64_t t0)
{
	const struct capture_req *q = f->q;
	struct pcap *c = f->m[0];
	struct pollfd pfd[2 + 1024];
	uint64_t now, shown = t0, checked = t0, deadline = t0 + q->duration_ns, ino, code;
	int i, n = 0, ms, sigfd, pidfd, every = pcap_drain_ms(&f->ev), lab_ms;

	sigfd = capture_stop_open();
	pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	pfd[n].fd = sigfd;
	pfd[n++].events = POLLIN;
	pfd[n].fd = pidfd;
	pfd[n++].events = POLLIN;
	for (i = 0; i < f->ev.nrings && n < (int)(sizeof(pfd) / sizeof(pfd[0])); i++) {
		pfd[n].fd = f->ev.rings[i].fd;
		pfd[n++].events = POLLIN;
	}
	while ((now = clock_mono_ns()) < deadline) {
		ms = (int)((deadline - now + 999999) / 1000000);
		if (ms > every)
			ms = every;
		/* Labelled threads: their rings of changes are read before they wrap. */
		if ((lab_ms = pfam_label_ms(f)) >= 0 && ms > lab_ms)
			ms = lab_ms;
		if (poll(pfd, (nfds_t)n, ms) < 0 && errno != EINTR)
			break;
		pfam_labels_sync(f);
		pfam_drain(f);
		c->st->drains++;
		pcap_jitter(c);
		if ((pfd[0].revents & POLLIN) && (rep->stop_signal = capture_stop_take(sigfd)))
			break;
		if ((pidfd >= 0 && (pfd[1].revents & POLLIN)) || (pidfd < 0 && target_exited(c->pid))) {
			rep->gone = 1;
			break;
		}
		if (c->execed)
			break;
		if (clock_mono_ns() - checked >= ACCESS_CHECK_NS) {
			checked = clock_mono_ns();
			if (pcap_access_lost(c->pid)) {
				rep->lost_access = 1;
				break;
			}
			/* An exec whose record a full ring dropped: the program itself says. */
			if (target_exec_id(c->pid, &ino, &code) == 0 &&
			    (ino != c->exe_ino || code != c->start_code)) {
				c->execed = 1;
				c->exec_time = checked;
				break;
			}
		}
		if (q->children && clock_mono_ns() - f->adopted_ns >= PERFPROC_ADOPT_NS)
			pfam_adopt(f);
		if (q->progress && clock_mono_ns() - shown >= PROGRESS_NS) {
			shown = clock_mono_ns();
			q->progress(shown - t0, q->duration_ns, c->st->samples, pfam_threads(f), 0);
		}
	}
	if (q->progress)
		q->progress(0, 0, 0, 0, 1);
	capture_stop_close(sigfd);
	if (pidfd >= 0)
		close(pidfd);
}

/*
 * Whether the kernel's call chains can be named, or 0 after one note
 * saying why there are no kernel frames (the addresses hidden from this
 * user). Only a probe: the names are read on first use, while the window
 * samples (kallsyms.h).
 */
static int pcap_kallsyms(const struct capture_req *q)
{
	static int said;
	int k = kallsyms_readable();

	if (!k && !said && !q->quiet) {
		said = 1;
		note("no kernel frames: %s", errno == EPERM ?
		     "the kernel hides its addresses from this user (kernel.kptr_restrict)" :
		     "/proc/kallsyms cannot be read");
	}
	return k;
}

/*
 * Open the events. 0; EXIT_ATTACH when the kernel refused them (why in
 * rep->sampler_why, nothing printed); EXIT_GONE when the target went away.
 */
static int pcap_open(struct pcap *c, const struct perf_access *a, struct capture_report *rep)
{
	const struct capture_req *q = c->q;
	struct perf_cfg cfg;
	char why[200];

	memset(&cfg, 0, sizeof(cfg));
	cfg.pid = c->pid;
	cfg.scope = a->scope;
	cfg.exclude_kernel = a->exclude_kernel;
	cfg.kernel_chain = q->kernel && !a->exclude_kernel && pcap_kallsyms(q);
	cfg.period_ns = (uint64_t)((double)q->period_ns * PERIOD_STRETCH);
	cfg.stack_bytes = q->stack_cap > PERF_STACK_MAX ? PERF_STACK_MAX : (uint32_t)q->stack_cap;
	cfg.ring_bytes = ring_bytes_for(q->period_ns, cfg.stack_bytes);
	if (q->stack_cap > PERF_STACK_MAX && q->stack_cap_given)
		note("--stack-size %zu is more than perf events copy; %u bytes of stack per sample",
		     q->stack_cap, PERF_STACK_MAX);
	if (!a->scope) {
		snprintf(rep->sampler_why, sizeof(rep->sampler_why), "%s", a->why);
		return EXIT_ATTACH;
	}
	if (perf_events_init(c->ev, &cfg) == 0)
		return 0;
	if (errno == ESRCH || target_exited(c->pid)) {
		rep->gone = 1;
		return target_gone_before(c->pid, c->comm);
	}
	perf_access_refusal(a, c->ev->failed, errno, why, sizeof(why));
	snprintf(rep->sampler_why, sizeof(rep->sampler_why), "%s", why);
	return EXIT_ATTACH;
}

/*
 * The end, for each member: its samples scaled to its clocks where it
 * still runs the program it ran (perf.c's pcap_settle), its source lines;
 * the totals and statistics added up into rep.
 */
static void pfam_settle(struct pfam *f, struct capture_report *rep)
{
	struct pcap *c, *root = f->m[0];
	uint64_t p1;
	int i, alive;

	for (i = 0; i < f->n; i++) {
		c = f->m[i];
		alive = c == root ? !rep->gone : !pfam_gone(c);
		if (!alive || c->execed || (!c->rec && c != root && c->unready))
			continue;
		if (c != root) {
			p1 = clock_process_cpu_ns(c->pid);
			c->proc_ns = p1 > c->proc0_ns ? p1 - c->proc0_ns : 0;
			rep->pf.cpu_process_ns += c->proc_ns;
		}
		c->wait_cost_ns = root->wait_cost_ns;
		c->timer_cost_ns = root->timer_cost_ns;
		/* Never sampled and no CPU: nothing to say (a descendant's map read only now). */
		if (!c->rec && (!c->proc_ns || pcap_ready(c) < 0))
			continue;
		/* Samples without a tid label cannot be scaled by thread: their weights stand. */
		if (c->labels & LABEL_TID)
			pcap_settle(c, f->prof, &c->cpu0, &c->slices0, c->proc_ns);
	}
	if (!root->scaled)
		pcap_lost_marker(root);
}

/* Source lines and inlined frames, like every source (doc/DESIGN.md); the recorders' statistics. */
static void pfam_finish(struct pfam *f, struct capture_report *rep)
{
	const struct capture_req *q = f->q;
	struct pcap *c;
	int i, j;

	rep->processes = 0;
	for (i = 0; i < f->n; i++) {
		c = f->m[i];
		if (c->rec) {
			recorder_lines(c->rec, q->debug, q->line_cache);
			if (i == 0)
				rep->rec = *recorder_stats(c->rec);
			else
				record_stats_add(&rep->rec, recorder_stats(c->rec));
		}
		rep->pf.altstack += c->alt.completed;
		rep->pf.altstack_stale += c->alt.stale;
		rep->pf.holes += c->hole.completed;
		rep->pf.holes_stale += c->hole.stale;
		for (j = 0; j < i && f->m[j]->pid != c->pid; j++)
			;
		rep->processes += j == i;
	}
	if (!q->children)
		rep->processes = 0;
	rep->threads = pfam_threads(f);
}

/*
 * After the window: the wait costs measured meanwhile, the labels and the
 * rings' last records, the samples settled to the clocks, and the report's
 * figures; the perf source's part of the end.
 */
static void pcap_end(struct pfam *f, struct pcap *c, const struct perf_access *a,
		     struct capture_report *rep, uint64_t duration_ns)
{
	const struct capture_req *q = f->q;

	/* Measured while the window ran (waitcost_start()): a few ms of futex wakes (waitcost.h). */
	if (a->scope != PERF_SCOPE_TASK) {
		c->wait_cost_ns = rep->pf.wait_cost_ns = waitcost_ns();
		c->timer_cost_ns = rep->pf.timer_cost_ns = waitcost_timer_ns();
	}
	pfam_labels_sync(f);
	pfam_drain(f);
	rep->pf.scope = a->scope;
	if (!rep->gone && !c->execed)
		pfam_settle(f, rep);
	else if (!c->scaled)
		pcap_lost_marker(c);
	rep->perf = 1;
	rep->execed = c->execed;
	rep->duration_ns = duration_ns;
	rep->samples = rep->pf.samples;
	rep->pf.corrupt += perf_events_corrupt(&f->ev);
	rep->pf.threads_opened = f->ev.threads;
	rep->pf.ring_bytes = f->ev.ring_bytes;
	rep->pf.rings = (uint32_t)f->ev.nrings;
	rep->pf.stack_bytes = f->ev.cfg.stack_bytes;
	if (!q->quiet)
		labelsrc_warn(c->lab, labelsrc_header(c->lab), c->pid, c->comm);
	pfam_finish(f, rep);
	if (q->children && f->adopt_failures)
		note("%llu descendants of %d (%s) could not be profiled (gone, or their memory map "
		     "unreadable)", (unsigned long long)f->adopt_failures, (int)c->pid, c->comm);
}

int perf_capture(const struct capture_req *q, const struct perf_access *a, int *refused,
		 struct profile **out, struct capture_report *rep)
{
	struct capture cx;
	struct pfam f;
	struct pcap *c = NULL;
	uint64_t t0, t1, p1;
	int code;

	*refused = 0;
	/* The wait cost, measured on a thread of its own meanwhile; needed only at the end. */
	waitcost_start();
	capture_open(&cx, q, rep, out);
	/*
	 * The rings must be read before they fill, also when the target keeps
	 * every CPU busy (a reader at nice 0 waits too long for its turn there,
	 * and records are lost), and the capture must start soon there too (at
	 * nice 0, opening the target's objects took far too long). Only this
	 * thread, only where allowed, from here to the window's end.
	 */
	if (hurry_nice() > READER_NICE)
		capture_nice(&cx, READER_NICE);
	code = capture_profile(&cx, (int64_t)q->period_ns);
	pfam_init(&f, q, cx.prof, &rep->pf);
	if (code != EXIT_OK)
		goto out;
	/*
	 * The program first (pfam_adopt_one), as near as can be to the read
	 * of its name: an exec before the events are enabled (the maps, the
	 * rings and the wait-cost measurement take tens of ms, more under
	 * ASan) is then seen by the window's checks; read later, an exec 300
	 * ms in went unseen (0 samples, exit 0).
	 */
	if (!(c = pfam_adopt_one(&f, q->t->pid, q->t->comm, 0))) {
		code = capture_map_failed(q->t, errno);
		goto out;
	}
	code = pcap_open(c, a, rep);
	if (code != EXIT_OK) {
		*refused = code == EXIT_ATTACH;
		goto out;
	}
	capture_children_mark(&cx, c->pid);
	target_say_capture(c->pid, c->comm, q->children, q->what, q->duration_ns, q->period_ns,
			   q->how);
	if (a->scope != PERF_SCOPE_TASK)
		c->jitter = (clock_mono_ns() ^ ((uint64_t)c->pid << 32)) | 1;
	pfam_adopt(&f); /* the descendants there are now, their clocks read now */
	settle_read_clocks(c->pid, &c->cpu0, &c->slices0); /* before the process clock: the live share is not overstated */
	rep->start_real_ns = clock_real_ns();
	c->proc0_ns = clock_process_cpu_ns(c->pid);
	t0 = clock_mono_ns();
	perf_events_enable(&f.ev);
	pcap_window(&f, rep, t0);
	perf_events_disable(&f.ev);
	t1 = clock_mono_ns();
	p1 = clock_process_cpu_ns(c->pid);
	c->proc_ns = p1 > c->proc0_ns ? p1 - c->proc0_ns : 0;
	rep->pf.cpu_process_ns = c->proc_ns;
	capture_nice_end(&cx);
	pcap_end(&f, c, a, rep, t1 - t0);
	code = capture_close(&cx, c->pid, c->comm, rep->pf.cpu_process_ns, out);
out:
	pfam_release(&f);
	capture_release(&cx);
	return code;
}
