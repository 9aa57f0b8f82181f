/*
 * offwaits.c — waits from switch and wake-up events (offwaits.h): a queue
 * sorted by time, then a small state machine per thread:
 *	SAMPLE: keep the stack it leaves with;  OUT: a wait begins;
 *	WAKE: keep the waker;  IN: the wait ends, emitted with all three.
 */
#include <stdlib.h>
#include <string.h>

#include "attach/source/offwaits.h"

/* TASK_REPORT_MAX: what the tracepoint reports for a preempted task (Linux 4.14+). */
#define REPORT_PREEMPT 0x100

const char *const offwait_state_name[OFFWAIT_NSTATES] = {
	[OFFWAIT_WAITING] = "waiting",	 [OFFWAIT_SLEEPING] = "sleeping",
	[OFFWAIT_DISK] = "disk wait",	 [OFFWAIT_PREEMPTED] = "preempted",
	[OFFWAIT_STOPPED] = "stopped",	 [OFFWAIT_OTHER] = "other",
};

struct offthr {
	uint32_t tid;
	uint8_t seen;          /* a switch of it was handled */
	uint8_t waiting;       /* off the CPU since out_time */
	uint8_t state;         /* the wait's */
	uint8_t before;        /* the wait began before the window */
	int8_t tp_state;       /* the last sample's, or -1 */
	uint64_t out_time, in_time;
	uint64_t stack_time;   /* when ids was taken */
	uint64_t *ids;
	uint32_t nids;
	/* The last wake-up since out_time: */
	uint64_t wake_time;
	const char *waker;
	uint32_t wpid, wtid;
	uint64_t *wids;
	uint32_t nwids;
};

enum offwait_state offwait_state_of(uint64_t s)
{
	if (s == 0 || s >= REPORT_PREEMPT)
		return OFFWAIT_PREEMPTED;
	if (s & 1)
		return OFFWAIT_SLEEPING;
	if (s & 2)
		return OFFWAIT_DISK;
	if (s & (4 | 8))
		return OFFWAIT_STOPPED;
	return OFFWAIT_OTHER;
}

void offwaits_init(struct offwaits *w, uint64_t t0, offwait_emit_fn *emit, void *ctx)
{
	memset(w, 0, sizeof(*w));
	w->t0 = t0;
	w->emit = emit;
	w->ctx = ctx;
	u64map_init(&w->idx, OFFWAITS_THREADS_MAX);
}

static void thr_forget_wake(struct offthr *t)
{
	free(t->wids);
	t->wids = NULL;
	t->nwids = 0;
	t->waker = NULL;
	t->wake_time = 0;
	t->wpid = t->wtid = 0;
}

static void thr_forget_stack(struct offthr *t)
{
	free(t->ids);
	t->ids = NULL;
	t->nids = 0;
}

void offwaits_release(struct offwaits *w)
{
	size_t i;

	for (i = 0; i < w->nq; i++)
		free(w->q[i].ids);
	for (i = 0; i < w->nthr; i++) {
		thr_forget_stack(&w->thr[i]);
		thr_forget_wake(&w->thr[i]);
	}
	free(w->q);
	free(w->thr);
	u64map_release(&w->idx);
	memset(w, 0, sizeof(*w));
}

/* tid's entry, made when new (NULL past the cap or out of memory). */
static struct offthr *thr_get(struct offwaits *w, uint32_t tid, int make)
{
	struct offthr *t;
	uint64_t i;

	if (u64map_get(&w->idx, tid, &i))
		return &w->thr[i - 1];
	if (!make)
		return NULL;
	if (w->nthr == w->capthr) {
		size_t n = w->capthr ? w->capthr * 2 : 64;
		struct offthr *v = n <= OFFWAITS_THREADS_MAX ? realloc(w->thr, n * sizeof(*v)) : NULL;

		if (!v) {
			w->st.threads_over++;
			return NULL;
		}
		w->thr = v;
		w->capthr = n;
	}
	if (u64map_put(&w->idx, tid, w->nthr + 1) < 0) {
		w->st.threads_over++;
		return NULL;
	}
	t = &w->thr[w->nthr++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->tp_state = -1;
	return t;
}

void offwaits_present(struct offwaits *w, uint32_t tid, enum offwait_state state, uint64_t *ids,
		      uint32_t nids)
{
	struct offthr *t = thr_get(w, tid, 1);

	if (!t) {
		free(ids);
		return;
	}
	/* Off the CPU (as far as we know) since the start, with the stack read then. */
	thr_forget_stack(t);
	t->waiting = 1;
	t->state = (uint8_t)state;
	t->before = 1;
	t->out_time = w->t0;
	t->stack_time = w->t0;
	t->in_time = 0;
	t->ids = ids;
	t->nids = ids ? nids : 0;
}

void offwaits_start(struct offwaits *w, uint64_t t0)
{
	size_t i;

	w->t0 = t0;
	for (i = 0; i < w->nthr; i++)
		if (w->thr[i].before && !w->thr[i].seen)
			w->thr[i].out_time = w->thr[i].stack_time = t0;
}

void offwaits_push(struct offwaits *w, const struct offwait_ev *ev)
{
	if (w->nq == w->capq) {
		size_t n = w->capq ? w->capq * 2 : 1024;
		struct offwait_ev *v = n <= OFFWAITS_QUEUE_MAX ? realloc(w->q, n * sizeof(*v)) : NULL;

		if (!v) {
			w->st.dropped++;
			free(ev->ids);
			return;
		}
		w->q = v;
		w->capq = n;
	}
	w->q[w->nq++] = *ev;
	w->st.events++;
}

/* By time; at one instant, in the order a switch happens: sample, out, wake, in. */
static int ev_cmp(const void *a, const void *b)
{
	const struct offwait_ev *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (x->kind > y->kind) - (x->kind < y->kind);
}

/* t's wait ends at end: emit it. */
static void thr_emit(struct offwaits *w, struct offthr *t, uint64_t end)
{
	struct offwait o;
	/* The stack is this wait's only when taken after the thread last came on a CPU. */
	int own = t->ids && (t->before || t->stack_time >= t->in_time);

	memset(&o, 0, sizeof(o));
	o.tid = t->tid;
	o.state = (enum offwait_state)t->state;
	o.before = t->before;
	o.ns = end > t->out_time ? end - t->out_time : 0;
	o.ids = own ? t->ids : NULL;
	o.nids = own ? t->nids : 0;
	if (t->waker && t->wake_time >= t->out_time) {
		o.waker = t->waker;
		o.wpid = t->wpid;
		o.wtid = t->wtid;
		o.wids = t->wids;
		o.nwids = t->nwids;
		w->st.woken++;
	}
	w->st.waits++;
	w->st.waits_ns += o.ns;
	w->st.no_stack += !own && !t->before;
	w->st.before += t->before;
	w->emit(w->ctx, &o);
	t->waiting = 0;
	t->before = 0;
	thr_forget_stack(t);
	thr_forget_wake(t);
}

/* Thread tid was picked to run at time (another of ours left the CPU for it): its wait ends. */
static void thr_picked(struct offwaits *w, uint32_t tid, uint64_t time)
{
	struct offthr *t = thr_get(w, tid, 0);

	if (!t || !t->waiting || time < t->out_time)
		return;
	thr_emit(w, t, time);
	t->seen = 1;
	t->in_time = time;
	t->tp_state = -1;
}

static void ev_handle(struct offwaits *w, struct offwait_ev *e)
{
	struct offthr *t = thr_get(w, e->tid, e->kind != OFFEV_WAKE);

	if (e->kind == OFFEV_SAMPLE && e->next_tid && e->next_tid != e->tid)
		thr_picked(w, e->next_tid, e->time);
	if (e->kind == OFFEV_PICK) {
		thr_picked(w, e->tid, e->time);
		return;
	}
	if (!t)
		return; /* e's stack is freed by the caller */
	switch (e->kind) {
	case OFFEV_SAMPLE:
		/* Taken as the thread leaves its CPU: a wait begins (its switch record refines it). */
		thr_forget_stack(t);
		t->ids = e->ids;
		t->nids = e->nids;
		e->ids = NULL;
		t->stack_time = e->time;
		t->tp_state = e->state;
		if (!t->waiting || t->before) {
			t->waiting = 1;
			t->before = 0;
			t->out_time = e->time;
			t->state = e->state >= 0 ? (uint8_t)e->state : OFFWAIT_WAITING;
			thr_forget_wake(t);
		}
		t->seen = 1;
		break;
	case OFFEV_OUT:
		if (t->waiting && t->seen && !t->before && t->stack_time >= t->in_time &&
		    t->stack_time >= t->out_time) {
			/* The wait its sample began (at the sample's time): the switch's word. */
		} else {
			/* No sample since it last came on a CPU: a wait without its stack. */
			if (t->stack_time < t->in_time || t->before)
				thr_forget_stack(t);
			t->waiting = 1;
			t->before = 0;
			t->out_time = e->time;
			t->tp_state = -1;
			thr_forget_wake(t);
		}
		t->seen = 1;
		if (e->preempt)
			t->state = OFFWAIT_PREEMPTED;
		else if (t->tp_state >= 0 && t->ids)
			t->state = (uint8_t)t->tp_state;
		else
			t->state = OFFWAIT_WAITING;
		break;
	case OFFEV_WAKE:
		if (!t->waiting)
			break;
		thr_forget_wake(t);
		t->wake_time = e->time;
		t->waker = e->waker;
		t->wpid = e->wpid;
		t->wtid = e->wtid;
		t->wids = e->ids;
		t->nwids = e->nids;
		e->ids = NULL;
		break;
	case OFFEV_IN:
		/* A thread not there at the start that comes on a CPU was just born: no wait. */
		if (t->waiting) {
			w->st.at_switch_in++;
			thr_emit(w, t, e->time);
		}
		t->seen = 1;
		t->in_time = e->time;
		t->tp_state = -1;
		break;
	}
}

void offwaits_run(struct offwaits *w, uint64_t upto)
{
	size_t i, k = 0;

	qsort(w->q, w->nq, sizeof(*w->q), ev_cmp);
	for (i = 0; i < w->nq && w->q[i].time <= upto; i++) {
		ev_handle(w, &w->q[i]);
		free(w->q[i].ids);
	}
	/* What is left waits for the rings' next read. */
	for (; i < w->nq; i++)
		w->q[k++] = w->q[i];
	w->nq = k;
}

void offwaits_end(struct offwaits *w, uint64_t t1)
{
	size_t i;

	offwaits_run(w, UINT64_MAX);
	for (i = 0; i < w->nthr; i++) {
		struct offthr *t = &w->thr[i];

		/* A thread never switched is the caller's: running throughout, or asleep. */
		if (t->waiting && t->seen)
			thr_emit(w, t, t1);
	}
}

int offwaits_unswitched(struct offwaits *w, uint32_t tid, uint64_t ns)
{
	struct offthr *t = thr_get(w, tid, 0);

	if (!t || t->seen || !t->waiting || !t->before)
		return -1;
	t->out_time = 0;
	thr_emit(w, t, ns);
	return 0;
}

int offwaits_seen(const struct offwaits *w, uint32_t tid)
{
	uint64_t i;

	return u64map_get(&w->idx, tid, &i) && w->thr[i - 1].seen;
}
