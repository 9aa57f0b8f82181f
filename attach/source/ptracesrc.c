/*
 * ptracesrc.c — the ptrace source: the pipeline engine -> unwind -> model for
 * the profile types sampled by stopping threads (cpu, wall, threads; the
 * policy in the request says which threads and what weight). The tracer
 * thread produces snapshots; this thread turns each into samples at once
 * (ptrecord.h), so memory stays bounded and the target is detached as
 * soon as sampling ends. Labels as the request asks; with --children, "pid" and "process";
 * and the program's own (labelsrc.h), as in force at the snapshot's time.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/ptrace/sampler.h"
#include "attach/capture/target.h"
#include "attach/source/capture.h"
#include "attach/source/children.h"
#include "attach/source/family.h"
#include "attach/source/labelsrc.h"
#include "attach/source/ptrecord.h"
#include "attach/source/settle.h"
#include "attach/source/source.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/waitcost.h"
#include "model/profile.h"

#define SEEN_MAX 65536
#define ADOPT_NS 1000000000ull /* --children: look for new descendants this often */
#define CONSUMER_NICE 10 /* the window's consumer yields to the tracer (capture_ptrace) */

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

/* One ptrace capture, from its setup to its release. */
struct ptcap {
	const struct capture_req *q;
	struct capture_report *rep;
	struct capture cx;
	struct sampler *sm;
	struct recorder *rec;     /* the target's (recs->rec[0]) */
	struct recorders *recs;
	struct family fam;
	int fam_on, stop_all, qinit;
	uint64_t adopted;         /* when the family last looked for new descendants */
	struct queue queue;
	struct held held;
	pid_t *seen;              /* the threads sampled, sorted */
	struct stack_hints *hints;
	unsigned labels;
	uint64_t short_ns;        /* short-lived threads' CPU, settled at the end */
	struct settle st;
};

/*
 * The tracer's read of the target's labels, each tick (sampler_cfg's
 * tick_hook). The consumer reads too, when a snapshot is newer than the
 * last read, but at nice 10 on a busy machine it may wait for a CPU
 * longer than a thread's ring of changes lasts; the tracer keeps its
 * turn, so the rings are read at the sampling's pace whatever the
 * consumer's.
 */
static void labels_tick(void *ctx)
{
	labelsrc_trysync(ctx, LABELSRC_POLL_MS / 2);
}

/* The tables, the target's recorder and the tracer's configuration. EXIT_OK or a code. */
static int ptcap_setup(struct ptcap *pc)
{
	const struct capture_req *q = pc->q;
	const struct target *t = q->t;
	struct sampler *sm;

	pc->seen = calloc(SEEN_MAX, sizeof(*pc->seen));
	pc->hints = malloc(sizeof(*pc->hints));
	if (pc->hints)
		hints_init(pc->hints, q->stack_cap);
	pc->recs = calloc(1, sizeof(*pc->recs));
	pc->sm = sm = calloc(1, sizeof(*sm));
	if (!pc->seen || !pc->hints || !pc->recs || !sm) {
		error("out of memory");
		return EXIT_INTERNAL;
	}
	pc->rec = recorder_new(pc->cx.prof, t->pid, RECORD_MAX_DEPTH);
	if (!pc->rec)
		return capture_map_failed(t, errno);
	pc->recs->pid[0] = t->pid;
	pc->recs->rec[0] = pc->rec;
	pc->recs->lab[0] = labelsrc_new(t->pid);
	pc->recs->n = 1;
	if (queue_init(&pc->queue) < 0) {
		error("out of memory");
		return EXIT_INTERNAL;
	}
	pc->qinit = 1;
	sm->cfg.pid = t->pid;
	sm->cfg.comm = t->comm;
	sm->cfg.what = q->what;
	sm->cfg.how = q->how;
	sm->cfg.policy = q->policy;
	sm->cfg.want_state = !!(pc->labels & LABEL_STATE);
	/* Where a thread sleeps in the kernel: for the types that show sleeping threads. */
	sm->cfg.want_kstack = q->kernel && !(q->policy->flags & POLICY_RUNNING);
	sm->cfg.period_ns = q->period_ns;
	sm->cfg.duration_ns = q->duration_ns;
	sm->cfg.stack_cap = q->stack_cap;
	sm->cfg.hints = pc->hints;
	sm->cfg.quiet = q->quiet;
	sm->cfg.queue = &pc->queue;
	/* A snapshot of every thread: its consumer reads while the stops come. */
	if (!(q->policy->flags & POLICY_ONCE)) {
		sm->cfg.tick_hook = labels_tick;
		sm->cfg.tick_ctx = pc->recs->lab[0];
	}
	sm->cfg.root = 1;
	if (q->children)
		sm->cfg.stop_all = &pc->stop_all;
	return EXIT_OK;
}

/* A snapshot whose labels can be read now: into its process's profile. */
static void ptcap_record(struct ptcap *pc, struct snapshot *snap)
{
	struct recorder *r;

	r = snap->pid == pc->q->t->pid ? pc->rec : recorders_get(pc->recs, pc->cx.prof, snap->pid);
	if (r == pc->rec && !pc->q->children && snap->how == SNAP_MARKER && !snap->tid) {
		pc->short_ns += (uint64_t)snap->weight; /* settled at the end */
	} else if (r) {
		ptrecord_snapshot(r, recorders_labels(pc->recs, r), pc->hints, pc->labels, snap);
		/*
		 * Every sample with a tid, markers too: an ended thread's
		 * samples are scaled to carry the short-lived threads' CPU
		 * by what they weigh, and one left out of that weight (a
		 * thread's last CPU, never found running) was scaled with
		 * them and added that much again.
		 */
		if (r == pc->rec && snap->tid)
			settle_add(&pc->st, (uint32_t)snap->tid, (uint64_t)snap->weight);
	}
	snapshot_free(snap);
}

/*
 * The consumer: take the tracer's snapshots as they come and record each
 * once its labels can be read, until the tracer closes the queue.
 */
static void ptcap_consume(struct ptcap *pc)
{
	const struct capture_req *q = pc->q;
	int once = !!(q->policy->flags & POLICY_ONCE), closed = 0;
	uint64_t t0, shown, popped = 0;
	struct snapshot *snap;

	t0 = shown = clock_mono_ns();
	for (;;) {
		if (pc->fam_on && clock_mono_ns() - pc->adopted >= ADOPT_NS) {
			/* Present descendants at once, new ones within a second of their birth. */
			family_adopt(&pc->fam);
			pc->adopted = clock_mono_ns();
		}
		if (once) {
			/*
			 * A snapshot of every thread reads the labels every
			 * millisecond while its stops come: a worker changes its
			 * labels at every request, and by the time a stop's
			 * snapshot was read (later still under a slow tracer)
			 * its ring had moved on past the stop, and most stacks
			 * went unlabelled.
			 */
			snap = queue_pop_timed(&pc->queue, 1, &closed);
			for (int k = 0; k < pc->recs->n; k++)
				labelsrc_sync(pc->recs->lab[k]);
		} else if (pc->held.head)
			snap = queue_pop_timed(&pc->queue, LABELSRC_MIN_MS, &closed);
		else if (q->progress || pc->fam_on)
			snap = queue_pop_timed(&pc->queue, 250, &closed);
		else
			closed = (snap = queue_pop(&pc->queue)) == NULL;
		/* Four times a second, whether samples flow or not. */
		if (q->progress && clock_mono_ns() - shown >= 250000000u) {
			shown = clock_mono_ns();
			q->progress(shown - t0, q->duration_ns, popped, pc->rep->threads, 0);
		}
		/*
		 * The tracer is done: nothing waits on this thread now, and at
		 * nice 10 on a saturated machine the queue's rest (stacks that
		 * each spend their unwind budget) took many times the window.
		 * Back to the start's nice.
		 */
		if (pc->cx.niced && queue_closed(&pc->queue))
			capture_nice_end(&pc->cx);
		if (snap) {
			popped++;
			if (snap->tid)
				seen_add(pc->seen, &pc->rep->threads, snap->tid);
			/* Its recorder and label reader now: held_pop asks the reader. */
			if (snap->pid != q->t->pid)
				(void)recorders_get(pc->recs, pc->cx.prof, snap->pid);
			held_push(&pc->held, snap);
		}
		/* Those whose labels can be read; at the end (or for a snapshot of every thread), all. */
		while ((snap = held_pop(&pc->held, pc->recs, closed || once)) != NULL)
			ptcap_record(pc, snap);
		if (closed)
			break;
	}
	if (q->progress)
		q->progress(0, 0, 0, 0, 1);
}

/* After the tracer: its results, the family's, the totals settled, lines. EXIT_OK or a code. */
static int ptcap_results(struct ptcap *pc)
{
	const struct target *t = pc->q->t;
	struct capture_report *rep = pc->rep;

	rep->sm = pc->sm->res;
	if (pc->fam_on) {
		family_join(&pc->fam);
		rep->processes = 1 + (uint64_t)pc->fam.n - pc->fam.attach_failures;
		for (int i = 0; i < pc->fam.n; i++)
			sampler_results_add(&rep->sm, &pc->fam.m[i]->sm.res);
		family_release(&pc->fam);
		pc->fam_on = 0;
	}
	if (rep->sm.attach_errno == ESRCH) {
		/* Gone between the check and the start (a series' later capture). */
		rep->gone = 1;
		return target_gone_before(t->pid, t->comm);
	}
	if (rep->sm.attach_errno) {
		int code = capture_begin_failed(t, rep->sm.attach_errno);

		rep->gone = code == EXIT_GONE;
		return code;
	}
	rep->ptrace = 1;
	rep->start_real_ns = rep->sm.start_real_ns;
	rep->duration_ns = rep->sm.end_mono_ns - rep->sm.start_mono_ns;
	rep->samples = rep->sm.samples;
	rep->gone = rep->sm.gone;
	rep->execed = rep->sm.execed;
	rep->stop_signal = rep->sm.stop_signal;
	rep->lost_access = rep->sm.lost_access;
	if (!rep->gone && !rep->execed)
		settle_short(&pc->st, pc->rec, t->pid, pc->short_ns);
	else if (pc->short_ns)
		settle_short(&pc->st, pc->rec, 0, pc->short_ns); /* no live threads to tell apart: the frame */
	if (!pc->q->quiet)
		labelsrc_warn(pc->recs->lab[0], labelsrc_header(pc->recs->lab[0]), t->pid, t->comm);
	for (int i = 0; i < pc->recs->n; i++)
		recorder_lines(pc->recs->rec[i], pc->q->debug, pc->q->line_cache);
	return EXIT_OK;
}

static void ptcap_release(struct ptcap *pc)
{
	if (pc->fam_on) {
		__atomic_store_n(&pc->stop_all, 1, __ATOMIC_RELAXED);
		family_join(&pc->fam);
		family_release(&pc->fam);
	}
	if (pc->rec)
		pc->rep->rec = *recorder_stats(pc->rec);
	if (pc->recs)
		recorders_release(pc->recs, &pc->rep->rec);
	settle_release(&pc->st);
	free(pc->recs);
	recorder_free(pc->rec);
	free(pc->sm);
	if (pc->qinit)
		queue_release(&pc->queue);
	free(pc->seen);
	free(pc->hints);
	capture_release(&pc->cx);
}

static int capture_ptrace(const struct capture_req *q, struct profile **out,
			  struct capture_report *rep)
{
	struct ptcap pc;
	pthread_t tracer;
	sigset_t set;
	int code;

	/* The wait cost, measured meanwhile: the tracer asks for it when it starts. */
	if (q->policy->flags & POLICY_WAITS)
		waitcost_start();
	memset(&pc, 0, sizeof(pc));
	pc.q = q;
	pc.rep = rep;
	pc.labels = q->labels | (q->children ? LABEL_PID | LABEL_PROCESS : 0);
	settle_init(&pc.st);
	capture_open(&pc.cx, q, rep, out);
	code = capture_profile(&pc.cx, q->policy->flags & POLICY_ONCE ? 1 : (int64_t)q->period_ns);
	if (code != EXIT_OK || (code = ptcap_setup(&pc)) != EXIT_OK)
		goto out;
	capture_children_mark(&pc.cx, q->t->pid);
	/* Every thread inherits this mask; the tracer reads them from a signalfd. */
	proc_stop_signals(&set, 1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (q->children) {
		/* Before the root's tracer: a snapshot's root may be done at once. */
		family_init(&pc.fam, q->t->pid, &pc.sm->cfg, clock_mono_ns() + q->duration_ns,
			    &pc.stop_all);
		pc.fam_on = 1;
		family_adopt(&pc.fam);
		pc.adopted = clock_mono_ns();
	}
	if (pthread_create(&tracer, NULL, sampler_main, pc.sm)) {
		error("cannot start the tracer thread");
		code = EXIT_INTERNAL;
		goto out;
	}
	/*
	 * Unwinding can wait; the tracer cannot, since a target thread stands
	 * still while the tracer runs. When the target keeps every CPU busy, a
	 * consumer at the tracer's priority preempts it mid-pause and the
	 * pauses grow many times longer, so the consumer yields: nice 10 for
	 * this thread only (the program's labels are read by the tracer too:
	 * labels_tick). Not for a snapshot of every thread, whose consumer
	 * reads the labels while the stops come and must get its turn then.
	 */
	if (!(q->policy->flags & POLICY_ONCE))
		capture_nice(&pc.cx, CONSUMER_NICE); /* the tracer inherited the start's */
	ptcap_consume(&pc);
	pthread_join(tracer, NULL);
	/* Nothing waits for this thread any more: the rest (source lines) at its own. */
	capture_nice_end(&pc.cx);
	code = ptcap_results(&pc);
	if (code == EXIT_OK)
		code = capture_close(&pc.cx, q->t->pid, q->t->comm, rep->sm.cpu_process_ns, out);
out:
	ptcap_release(&pc);
	return code;
}

const struct source source_ptrace = {
	.name = "ptrace",
	.capture = capture_ptrace,
	.can = SOURCE_CLOCK | SOURCE_CHILDREN,
};
