/*
 * offread.c — the off-CPU source's rings read (offcap.h): switch-out
 * samples (the stack, the tracepoint's prev_state and next_pid), switch
 * records (the instants out and in), wake-ups (the waker: a thread of the
 * target with its stack, another process's by name, a timer, an
 * interrupt), each made an offwaits event; the kernel's filter of the
 * wake-ups kept to the target's threads.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/perf/kchain.h"
#include "attach/perf/ring.h"
#include "attach/source/offcap.h"
#include "attach/source/record.h"
#include "attach/source/result.h"
#include "common/proc.h"

/*
 * s unwound, the kernel frames names[0..nk) below its user stack, into a
 * malloc'd id array (*nids of them), or NULL: no user registers, or no stack.
 */
static uint64_t *off_unwind(struct offcap *o, const struct perf_sample *s,
			    const struct perf_layout *l, const char *const *names, unsigned nk,
			    uint32_t *nids)
{
	struct thread_image img;

	*nids = 0;
	recorder_kernel(o->rec, names, nk);
	if (ring_sample_image(s, l->regs_mask, &img) < 0) {
		recorder_kernel(o->rec, NULL, 0);
		return NULL;
	}
	return recorder_stack_copy(o->rec, &img, nids);
}

/* A raw field of up to 8 bytes, or -1 when the sample does not hold it. */
static int64_t raw_field(const struct perf_sample *s, const struct tracefs_field *f)
{
	int64_t v = 0;

	if (!f->size || f->size > 8 || !s->raw || f->offset + f->size > s->raw_len)
		return -1;
	memcpy(&v, s->raw + f->offset, f->size); /* little-endian */
	return v;
}

void offread_switch_sample(void *ctx, const unsigned char *rec, size_t len)
{
	struct offcap *o = ctx;
	const char *names[PERF_CHAIN_MAX];
	struct offwait_ev e;
	struct perf_sample s;
	unsigned nk;
	int64_t st;

	if (ring_record_type(rec, len) == PERF_REC_LOST) {
		uint64_t n;

		if (ring_parse_lost(rec, len, &n) == 0)
			o->st->lost_stacks += n;
		return;
	}
	if (ring_record_type(rec, len) == PERF_REC_THROTTLE)
		o->st->throttled++;
	if (ring_record_type(rec, len) != PERF_REC_SAMPLE)
		return;
	if (ring_parse_sample(&o->stacks.layout, rec, len, &s) < 0) {
		o->st->corrupt++;
		return;
	}
	if (s.pid != (uint32_t)o->pid || s.tid == PERF_TID_GONE)
		return;
	memset(&e, 0, sizeof(e));
	e.kind = OFFEV_SAMPLE;
	e.time = s.time;
	e.tid = s.tid;
	st = raw_field(&s, &o->prev_state);
	e.state = st < 0 ? -1 : (int8_t)offwait_state_of((uint64_t)st);
	st = raw_field(&s, &o->next_pid);
	e.next_tid = st > 0 ? (uint32_t)st : 0;
	nk = o->q->kernel ? kchain_names(&s, names, PERF_CHAIN_MAX) : 0;
	o->st->kernel_stacks += nk > 0;
	if (!(e.ids = off_unwind(o, &s, &o->stacks.layout, names, nk, &e.nids)) && !s.abi)
		o->st->no_regs++;
	o->st->samples++;
	offwaits_push(&o->w, &e);
}

void offread_switch_record(void *ctx, const unsigned char *rec, size_t len)
{
	struct offcap *o = ctx;
	struct perf_switch sw;
	struct offwait_ev e;
	uint32_t pid, tid;
	char name[16];
	int exec;
	uint64_t n;

	switch (ring_record_type(rec, len)) {
	case PERF_REC_SWITCH:
		if (ring_parse_switch(&o->times.layout, rec, len, &sw) < 0) {
			o->st->corrupt++;
			return;
		}
		if (sw.pid != (uint32_t)o->pid)
			return;
		memset(&e, 0, sizeof(e));
		e.kind = sw.out ? OFFEV_OUT : OFFEV_IN;
		e.preempt = (uint8_t)sw.preempt;
		e.time = sw.time;
		e.tid = sw.tid;
		o->st->switches += sw.out;
		if ((o->have_wakes || o->have_picks) && !u64map_get(&o->filtered, sw.tid, &n))
			o->refilter = 1;
		offwaits_push(&o->w, &e);
		break;
	case PERF_REC_LOST:
		if (ring_parse_lost(rec, len, &n) == 0)
			o->st->lost_switches += n;
		break;
	case PERF_REC_COMM:
		if (ring_parse_comm(rec, len, &pid, &tid, name, &exec) == 0 && pid == (uint32_t)o->pid)
			tnames_rename(&o->names, tid, name);
		break;
	default:
		break;
	}
}

/* The name of waker tid of another process pid: its comm, kept (a few), else a word. */
static const char *off_foreign(struct offcap *o, uint32_t pid, uint32_t tid)
{
	char path[64], buf[32], *nl;
	unsigned i;

	if (o->nwakers >= sizeof(o->wakers) / sizeof(o->wakers[0]))
		return "[another process]";
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	if (proc_read(path, buf, sizeof(buf)) <= 0)
		return "[another process]";
	if ((nl = strchr(buf, '\n')))
		*nl = 0;
	for (i = 0; i < o->nwakers; i++)
		if (!strcmp(o->wakers[i], buf))
			return o->wakers[i];
	snprintf(o->wakers[o->nwakers], sizeof(o->wakers[0]), "%.15s", buf);
	return o->wakers[o->nwakers++];
}

void offread_wake(void *ctx, const unsigned char *rec, size_t len)
{
	struct offcap *o = ctx;
	const char *names[PERF_CHAIN_MAX];
	struct offwait_ev e;
	struct perf_sample s;
	enum kchain_ctx how;
	int64_t wakee;
	unsigned nk;

	if (ring_record_type(rec, len) == PERF_REC_LOST) {
		uint64_t n;

		if (ring_parse_lost(rec, len, &n) == 0)
			o->st->lost_wakes += n;
		return;
	}
	if (ring_record_type(rec, len) != PERF_REC_SAMPLE ||
	    ring_parse_sample(&o->wakes.layout, rec, len, &s) < 0)
		return;
	if ((wakee = raw_field(&s, &o->wakee)) <= 0)
		return;
	memset(&e, 0, sizeof(e));
	e.kind = OFFEV_WAKE;
	e.time = s.time;
	e.tid = (uint32_t)wakee;
	nk = kchain_names(&s, names, PERF_CHAIN_MAX);
	how = kchain_context(names, nk);
	o->st->wakes++;
	if (how == KCHAIN_TIMER) {
		e.waker = "[timer]";
	} else if (how == KCHAIN_IRQ || s.pid == 0) {
		e.waker = "[interrupt]";
	} else if (s.pid == (uint32_t)o->pid) {
		e.waker = tnames_get(&o->names, s.tid);
		e.wpid = s.pid;
		e.wtid = s.tid;
		if (o->q->waker_stacks)
			e.ids = off_unwind(o, &s, &o->wakes.layout, names, o->q->kernel ? nk : 0,
					   &e.nids);
	} else {
		e.waker = off_foreign(o, s.pid, s.tid);
		e.wpid = s.pid;
		e.wtid = s.tid;
	}
	offwaits_push(&o->w, &e);
}

/* The wake-up filter: the target's threads known so far (at most FILTER_TIDS). */
/*
 * A CPU-wide sched_switch whose next_pid is one of ours (the filter's): the
 * instant that thread was picked, before the switching, whoever left the
 * CPU for it (a thread of another process too).
 */
void offread_pick(void *ctx, const unsigned char *rec, size_t len)
{
	struct offcap *o = ctx;
	struct offwait_ev e;
	struct perf_sample s;
	uint64_t ours;
	int64_t next;

	if (ring_record_type(rec, len) == PERF_REC_LOST) {
		uint64_t n;

		if (ring_parse_lost(rec, len, &n) == 0)
			o->st->lost_picks += n;
		return;
	}
	if (ring_record_type(rec, len) != PERF_REC_SAMPLE ||
	    ring_parse_sample(&o->picks.layout, rec, len, &s) < 0 ||
	    (next = raw_field(&s, &o->next_pid)) <= 0 || !u64map_get(&o->filtered, (uint64_t)next, &ours))
		return;
	memset(&e, 0, sizeof(e));
	e.kind = OFFEV_PICK;
	e.time = s.time;
	e.tid = (uint32_t)next;
	o->st->picks++;
	offwaits_push(&o->w, &e);
}

/* "FIELD == tid || ..." for tids[0..n); NULL when none or out of memory. */
static char *filter_of(const char *field, const uint64_t *tids, unsigned n)
{
	size_t len = 0, cap = (size_t)n * 40 + 1;
	char *f = n ? malloc(cap) : NULL;
	unsigned i;

	if (!f)
		return NULL;
	f[0] = 0;
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(f + len, cap - len, "%s%s == %llu", i ? " || " : "", field,
					(unsigned long long)tids[i]);
	return f;
}

void offread_filter(struct offcap *o)
{
	uint64_t tids[FILTER_TIDS];
	char path[64], *f = NULL;
	struct dirent *d;
	unsigned n = 0;
	DIR *dir;

	o->refilter = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)o->pid);
	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		long tid = strtol(d->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		if (n == FILTER_TIDS) {
			o->st->wakers_unfollowed++;
			continue;
		}
		u64map_put(&o->filtered, (uint64_t)tid, 1);
		tids[n++] = (uint64_t)tid;
	}
	closedir(dir);
	if (o->have_wakes && (!(f = filter_of("pid", tids, n)) || perf_events_filter(&o->wakes, f) < 0))
		o->st->filter_failed = n != 0;
	free(f);
	f = NULL;
	/* Unfiltered, every switch on the machine would come: without a filter, no picks. */
	if (o->have_picks && (!(f = filter_of("next_pid", tids, n)) || perf_events_filter(&o->picks, f) < 0)) {
		perf_events_disable(&o->picks);
		o->have_picks = 0;
	}
	free(f);
}
