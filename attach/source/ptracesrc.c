/*
 * ptracesrc.c — the ptrace source: the pipeline engine -> unwind -> model for
 * the profile types sampled by stopping threads (cpu, wall, threads; the
 * policy in the request says which threads and what weight). The tracer
 * thread produces snapshots; this thread turns each into a sample at once,
 * so memory stays bounded and the target is detached as soon as sampling
 * ends. Labels as the request asks; with --children, "pid" and "process";
 * and the program's own (labelsrc.h), as in force at the snapshot's time.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/ptrace/sampler.h"
#include "attach/ptrace/syscalls.h"
#include "attach/capture/target.h"
#include "attach/source/children.h"
#include "attach/source/family.h"
#include "attach/source/labelsrc.h"
#include "attach/source/settle.h"
#include "attach/source/source.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/hurry.h"
#include "common/waitcost.h"
#include "model/profile.h"

#define SEEN_MAX 65536
#define ADOPT_NS 1000000000ull /* --children: look for new descendants this often */

/* --children: one recorder per process (each has its own memory map). */
struct recorders {
	pid_t pid[CHILDREN_MAX + 1];
	struct recorder *rec[CHILDREN_MAX + 1];
	struct label_src *lab[CHILDREN_MAX + 1]; /* the program's labels; NULL: none read */
	int n;
};

/* The recorder for pid, made on its first sample; NULL when it cannot be. */
static struct recorder *recorders_get(struct recorders *rs, struct profile *prof, pid_t pid)
{
	int i;

	for (i = 0; i < rs->n; i++)
		if (rs->pid[i] == pid)
			return rs->rec[i];
	if (rs->n > CHILDREN_MAX)
		return NULL;
	rs->pid[rs->n] = pid;
	rs->rec[rs->n] = recorder_new(prof, pid, RECORD_MAX_DEPTH); /* NULL: gone, or not ours */
	rs->lab[rs->n] = labelsrc_new(pid);
	return rs->rec[rs->n++];
}

/* The label reader of the recorder r's process (NULL: none). */
static struct label_src *recorders_labels(const struct recorders *rs, const struct recorder *r)
{
	int i;

	for (i = 0; i < rs->n; i++)
		if (rs->rec[i] == r)
			return rs->lab[i];
	return NULL;
}

/* Add up the recorders' statistics into the first one's; free all but the first. */
static void recorders_release(struct recorders *rs, struct record_stats *total)
{
	int i;

	for (i = 0; i < rs->n; i++) {
		labelsrc_free(rs->lab[i]);
		rs->lab[i] = NULL;
	}
	for (i = 1; i < rs->n; i++) {
		if (!rs->rec[i])
			continue;
		record_stats_add(total, recorder_stats(rs->rec[i]));
		recorder_free(rs->rec[i]);
	}
	rs->n = 1;
}

/* The recorder's key for a thread's last stack found running (its tid's is its last stack). */
#define RUNNING_KEY(tid) ((uint64_t)(uint32_t)(tid) | 1ull << 32)

static const char *state_name(char c)
{
	switch (c) {
	case 'R': return "running";
	case SNAP_STATE_QUEUED: return "runnable";
	case 'S': return "sleeping";
	case 'D': return "disk wait";
	case 'T': return "stopped";
	case 't': return "tracing stop";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	case 'P': return "parked";
	default: return "unknown";
	}
}

static void record_snapshot(struct recorder *rec, struct label_src *lab,
			    struct stack_hints *hints, unsigned labels, struct snapshot *snap)
{
	size_t used;
	unsigned k;
	int overran, complete;

	struct profile_label_in l[CAPTURE_THREAD_LABELS + 2 + LABELSRC_MAX]; /* + state, syscall */
	int64_t v[2] = { snap->count, snap->weight };
	const char *sc = NULL;
	char nr[32];
	size_t nl = 0;

	memset(l, 0, sizeof(l));
	nl = capture_thread_labels(labels, snap->name, snap->tid, snap->pid, snap->comm, l);
	if (labels & LABEL_STATE) {
		l[nl].key = "state";
		l[nl++].str = state_name(snap->state);
	}
	if ((labels & LABEL_SYSCALL) && (snap->how == SNAP_SYSCALL || snap->how == SNAP_REPEAT) &&
	    snap->syscall >= 0) {
		sc = syscall_name(snap->syscall);
		if (!sc) {
			snprintf(nr, sizeof(nr), "syscall %ld", snap->syscall);
			sc = nr;
		}
		l[nl].key = "syscall";
		l[nl++].str = sc;
	}
	if (snap->tid)
		nl += labelsrc_at(lab, (uint32_t)snap->tid, snap->time_ns, l + nl, LABELSRC_MAX);
	if (snap->how == SNAP_LOST) {
		recorder_marker_sample(rec, "[not captured: running, did not stop in time]", v,
				       l, nl);
		return;
	}
	if (snap->how == SNAP_MARKER && !snap->tid) {
		/* A marker for no thread carries its process's labels only. */
		struct profile_label_in pl[2];
		size_t np = 0;

		memset(pl, 0, sizeof(pl));
		for (k = 0; k < nl; k++)
			if (!strcmp(l[k].key, "pid") || !strcmp(l[k].key, "process"))
				pl[np++] = l[k];
		recorder_marker_sample(rec, snap->marker, v, pl, np);
		return;
	}
	if (snap->how == SNAP_MARKER) {
		recorder_marker_sample(rec, snap->marker, v, l, nl);
		return;
	}
	if (snap->how == SNAP_REPEAT) {
		if ((snap->repeat_running &&
		     recorder_repeat(rec, RUNNING_KEY(snap->tid), v, l, nl) == 0) ||
		    recorder_repeat(rec, (uint64_t)snap->tid, v, l, nl) == 0)
			return;
		/* No earlier stack (the engine repeats only stacked threads): named, never stackless. */
		recorder_marker_sample(rec, "[not captured: no earlier stack to repeat]", v, l, nl);
		return;
	}
	recorder_add(rec, (uint64_t)snap->tid, &snap->img, v, l, nl);
	if (snap->how == SNAP_STOPPED && snap->state == 'R' && !snap->slid)
		recorder_remember(rec, RUNNING_KEY(snap->tid));
	if (!snap->img.nstacks)
		return;
	/*
	 * The hint is the thread's own stack's end: with two regions (sp on an
	 * alternate signal stack) that is the interrupted stack, region 1.
	 */
	k = snap->img.nstacks - 1;
	used = recorder_stack_used(rec, k, &overran, &complete);
	hints_note(hints, snap->tid, snap->img.stack[k].addr, snap->img.stack[k].addr + used,
		   complete, overran);
}

/*
 * Snapshots held until the program's labels at their time can be read
 * (labelsrc_ready): a read of the segment copies every labelled thread's
 * slot, so it is made at most once a millisecond, not once a snapshot,
 * and a snapshot newer than the last read waits for the next one. A FIFO
 * through snapshot.next.
 */
struct held {
	struct snapshot *head, *tail;
};

static void held_push(struct held *h, struct snapshot *s)
{
	s->next = NULL;
	if (h->tail)
		h->tail->next = s;
	else
		h->head = s;
	h->tail = s;
}

/*
 * The oldest held snapshot if it may be taken now, else NULL. With force
 * (the end, or a one-shot snapshot) every one is, after one more read of
 * the labels if its time is past the last: a thread dump's snapshots all
 * came after the read its start made.
 */
static struct snapshot *held_pop(struct held *h, const struct recorders *rs, int force)
{
	struct snapshot *s = h->head;
	int i;

	if (!s)
		return NULL;
	if (s->tid) {
		for (i = 0; i < rs->n && rs->pid[i] != s->pid; i++)
			;
		if (i < rs->n && !labelsrc_ready(rs->lab[i], s->time_ns)) {
			if (!force)
				return NULL;
			labelsrc_sync(rs->lab[i]);
		}
	}
	h->head = s->next;
	if (!h->head)
		h->tail = NULL;
	return s;
}

/* Count distinct tids in a small sorted set. */
static void seen_add(pid_t *seen, uint64_t *n, pid_t tid)
{
	uint64_t lo = 0, hi = *n, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (seen[mid] == tid)
			return;
		if (seen[mid] < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (*n >= SEEN_MAX)
		return;
	memmove(seen + lo + 1, seen + lo, (*n - lo) * sizeof(*seen));
	seen[lo] = tid;
	(*n)++;
}

/*
 * The CPU the process clock showed and no thread's clock did ran in
 * threads that lived between two reads of the thread list. The ones a
 * tick caught (they ended before the capture did) stand for the others:
 * their samples are scaled up to carry it all. Caught none (or pid 0: the
 * process is gone, live threads cannot be told from ended ones): one frame.
 */
static void settle_short(struct settle *st, struct recorder *rec, pid_t pid, uint64_t short_ns)
{
	int64_t v[2] = { 0, (int64_t)short_ns };
	uint64_t ended;

	if (!short_ns)
		return;
	if (!pid) {
		recorder_marker_sample(rec, SHORT_LIVED_FRAME, v, NULL, 0);
		return;
	}
	settle_read_live(st, pid);
	ended = settle_ended_weight(st);
	if (ended) {
		st->ended = (double)(ended + short_ns) / (double)ended;
		settle_apply(st, recorder_profile(rec), 1);
		return;
	}
	recorder_marker_sample(rec, SHORT_LIVED_FRAME, v, NULL, 0);
}

static int capture_ptrace(const struct capture_req *q, struct profile **out,
			  struct capture_report *rep)
{
	const struct target *t = q->t;
	struct sampler *sm = NULL;
	struct profile *prof = NULL;
	struct recorder *rec = NULL, *r;
	struct recorders *recs = NULL;
	struct family fam;
	struct child_cpu *kids = NULL;
	int nkids = 0, stop_all = 0, fam_on = 0;
	uint64_t adopted = 0;
	struct queue queue;
	struct held held = { NULL, NULL };
	struct snapshot *snap;
	pthread_t tracer;
	int code = EXIT_INTERNAL;
	sigset_t set;
	pid_t *seen = NULL;
	struct stack_hints *hints = NULL;
	int64_t period;
	unsigned labels = q->labels;
	uint64_t t0, shown, popped = 0, short_ns = 0;
	int qinit = 0, closed = 0, nice_was;
	struct settle st;

	/* The wait cost, measured meanwhile: the tracer asks for it when it starts. */
	if (q->policy->flags & POLICY_WAITS)
		waitcost_start();
	*out = NULL;
	memset(rep, 0, sizeof(*rep));
	settle_init(&st);
	if (q->children)
		labels |= LABEL_PID | LABEL_PROCESS;
	period = (int64_t)q->period_ns;
	prof = profile_new();
	seen = calloc(SEEN_MAX, sizeof(*seen));
	hints = malloc(sizeof(*hints));
	if (hints)
		hints_init(hints, q->stack_cap);
	recs = calloc(1, sizeof(*recs));
	sm = calloc(1, sizeof(*sm));
	if (!prof || !seen || !hints || !recs || !sm ||
	    capture_declare(q, prof, q->policy->flags & POLICY_ONCE ? 1 : period) < 0) {
		error("out of memory");
		goto err;
	}
	rec = recorder_new(prof, t->pid, RECORD_MAX_DEPTH);
	if (!rec) {
		if (errno == EACCES || errno == EPERM || errno == ESRCH || errno == ENOENT) {
			code = capture_begin_failed(t, errno == ENOENT ? ESRCH : EPERM);
		} else {
			error_errno("cannot read the memory map of %d", (int)t->pid);
		}
		goto err;
	}
	recs->pid[0] = t->pid;
	recs->rec[0] = rec;
	recs->lab[0] = labelsrc_new(t->pid);
	recs->n = 1;
	/* A CPU profile that finds nothing may be of a master whose workers do the work. */
	if (q->runs_only && !q->children &&
	    (kids = calloc(CHILDREN_MAX, sizeof(*kids))))
		nkids = children_cpu(t->pid, kids, CHILDREN_MAX);
	if (queue_init(&queue) < 0) {
		error("out of memory");
		goto err;
	}
	qinit = 1;
	sm->cfg.pid = t->pid;
	sm->cfg.comm = t->comm;
	sm->cfg.what = q->what;
	sm->cfg.how = q->how;
	sm->cfg.policy = q->policy;
	sm->cfg.want_state = !!(labels & LABEL_STATE);
	sm->cfg.period_ns = (uint64_t)period;
	sm->cfg.duration_ns = q->duration_ns;
	sm->cfg.stack_cap = q->stack_cap;
	sm->cfg.hints = hints;
	sm->cfg.quiet = q->quiet;
	sm->cfg.queue = &queue;
	sm->cfg.root = 1;
	if (q->children)
		sm->cfg.stop_all = &stop_all;

	/* Every thread inherits this mask; the tracer reads them from a signalfd. */
	proc_stop_signals(&set, 1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (q->children) {
		/* Before the root's tracer: a snapshot's root may be done at once. */
		family_init(&fam, t->pid, &sm->cfg, clock_mono_ns() + q->duration_ns, &stop_all);
		fam_on = 1;
		family_adopt(&fam);
		adopted = clock_mono_ns();
	}
	if (pthread_create(&tracer, NULL, sampler_main, sm)) {
		error("cannot start the tracer thread");
		goto err;
	}
	/*
	 * Unwinding can wait; the tracer cannot, since a target thread stands
	 * still while the tracer runs. When the target keeps every CPU busy, a
	 * consumer at the tracer's priority preempts it mid-pause (measured:
	 * p50 pause 1.4 ms instead of 60 us on two CPUs), so the consumer
	 * yields: nice 10 for this thread only. Not for a snapshot of every
	 * thread, whose consumer reads the labels while the stops come
	 * (below) and must get its turn then.
	 */
	nice_was = hurry_nice(); /* the start is done (hurry.h): the tracer inherited its priority */
	if (!(q->policy->flags & POLICY_ONCE)) {
		hurry_end();
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	}
	t0 = shown = clock_mono_ns();
	for (;;) {
		if (fam_on && clock_mono_ns() - adopted >= ADOPT_NS) {
			/* Present descendants at once, new ones within a second of their birth. */
			family_adopt(&fam);
			adopted = clock_mono_ns();
		}
		if (q->policy->flags & POLICY_ONCE) {
			/*
			 * A snapshot of every thread reads the labels every
			 * millisecond while its stops come: a worker changes its
			 * labels at every request, and by the time a stop's
			 * snapshot was read (ASan: deferred stops, 145 ms) its
			 * ring had moved on past the stop (1 of 4 labelled).
			 */
			snap = queue_pop_timed(&queue, 1, &closed);
			for (int k = 0; k < recs->n; k++)
				labelsrc_sync(recs->lab[k]);
		} else if (held.head)
			snap = queue_pop_timed(&queue, LABELSRC_MIN_MS, &closed);
		else if (q->progress || fam_on)
			snap = queue_pop_timed(&queue, 250, &closed);
		else
			closed = (snap = queue_pop(&queue)) == NULL;
		/* Four times a second, whether samples flow or not. */
		if (q->progress && clock_mono_ns() - shown >= 250000000u) {
			shown = clock_mono_ns();
			q->progress(shown - t0, q->duration_ns, popped, rep->threads, 0);
		}
		if (snap) {
			popped++;
			if (snap->tid)
				seen_add(seen, &rep->threads, snap->tid);
			/* Its recorder and label reader now: held_pop asks the reader. */
			if (snap->pid != t->pid)
				(void)recorders_get(recs, prof, snap->pid);
			held_push(&held, snap);
		}
		/*
		 * Those whose labels can be read; at the end, all. A snapshot of
		 * every thread (threads) reads them as soon as its stops come:
		 * a worker changes its labels at every request, and a read 145
		 * ms later (ASan's deferred stops) found its ring had moved on.
		 */
		while ((snap = held_pop(&held, recs,
					closed || (q->policy->flags & POLICY_ONCE))) != NULL) {
			r = snap->pid == t->pid ? rec : recorders_get(recs, prof, snap->pid);
			if (r == rec && !q->children && snap->how == SNAP_MARKER && !snap->tid) {
				short_ns += (uint64_t)snap->weight; /* settled at the end */
			} else if (r) {
				record_snapshot(r, recorders_labels(recs, r), hints, labels, snap);
				if (r == rec && snap->tid && snap->how != SNAP_MARKER)
					settle_add(&st, (uint32_t)snap->tid, (uint64_t)snap->weight);
			}
			snapshot_free(snap);
		}
		if (closed)
			break;
	}
	if (q->progress)
		q->progress(0, 0, 0, 0, 1);
	pthread_join(tracer, NULL);
	/* Nothing waits for this thread any more: the rest (source lines) at full speed. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice_was);
	rep->sm = sm->res;
	if (fam_on) {
		family_join(&fam);
		rep->processes = 1 + (uint64_t)fam.n - fam.attach_failures;
		for (int i = 0; i < fam.n; i++)
			sampler_results_add(&rep->sm, &fam.m[i]->sm.res);
		family_release(&fam);
	}
	if (rep->sm.attach_errno == ESRCH) {
		/* Gone between the check and the start (a series' later capture). */
		error("%d (%s) exited before anything was captured; no profile written", (int)t->pid,
		      t->comm);
		rep->gone = 1;
		code = EXIT_GONE;
		goto err;
	}
	if (rep->sm.attach_errno) {
		code = capture_begin_failed(t, rep->sm.attach_errno);
		rep->gone = code == EXIT_GONE;
		goto err;
	}
	rep->ptrace = 1;
	rep->start_real_ns = rep->sm.start_real_ns;
	rep->duration_ns = rep->sm.end_mono_ns - rep->sm.start_mono_ns;
	rep->samples = rep->sm.samples;
	rep->gone = rep->sm.gone;
	rep->execed = rep->sm.execed;
	rep->stop_signal = rep->sm.stop_signal;
	rep->lost_access = rep->sm.lost_access;
	profile_set_time(prof, (int64_t)rep->start_real_ns, (int64_t)rep->duration_ns);
	if (!rep->gone && !rep->execed)
		settle_short(&st, rec, t->pid, short_ns);
	else if (short_ns)
		settle_short(&st, rec, 0, short_ns); /* no live threads to tell apart: the frame */
	settle_release(&st);
	if (!q->quiet)
		labelsrc_warn(recs->lab[0], labelsrc_header(recs->lab[0]), t->pid, t->comm);
	for (int i = 0; i < recs->n; i++)
		recorder_lines(recs->rec[i], q->debug, q->line_cache);
	rep->rec = *recorder_stats(rec);
	recorders_release(recs, &rep->rec);
	rep->cpu_self_s = capture_self_cpu();
	if (nkids >= 0 && kids && !q->quiet && !rep->stop_signal)
		children_note(t->pid, t->comm, kids, nkids, rep->sm.cpu_process_ns, rep->duration_ns);
	free(kids);
	free(recs);
	free(sm);
	recorder_free(rec);
	queue_release(&queue);
	free(seen);
	free(hints);
	*out = prof;
	return EXIT_OK;
err:
	if (fam_on) {
		__atomic_store_n(&stop_all, 1, __ATOMIC_RELAXED);
		family_join(&fam);
		family_release(&fam);
	}
	if (recs)
		recorders_release(recs, &rep->rec);
	settle_release(&st);
	free(recs);
	free(kids);
	free(sm);
	recorder_free(rec);
	if (qinit)
		queue_release(&queue);
	profile_free(prof);
	free(seen);
	free(hints);
	return code;
}

const struct source source_ptrace = {
	.name = "ptrace",
	.capture = capture_ptrace,
	.can = SOURCE_CLOCK | SOURCE_CHILDREN,
};
