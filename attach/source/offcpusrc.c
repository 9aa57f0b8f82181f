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
 * offwaits.c turns the events into waits; this file opens the events,
 * reads the rings and makes each wait a sample.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/capture/target.h"
#include "attach/perf/events.h"
#include "attach/perf/kchain.h"
#include "attach/perf/perfaccess.h"
#include "attach/perf/stackhole.h"
#include "attach/perf/tracefs.h"
#include "attach/ptrace/kstack.h"
#include "attach/source/capture.h"
#include "attach/source/offwaits.h"
#include "attach/source/record.h"
#include "attach/source/source.h"
#include "attach/source/tnames.h"
#include "common/err.h"
#include "common/hurry.h"
#include "common/proc.h"
#include "common/u64map.h"
#include "common/vmread.h"
#include "model/profile.h"
#include "unwind/kallsyms.h"

#define DRAIN_MS 50            /* read the rings at least this often */
#define ORDER_SLACK_NS 2000000ull /* events this recent may still be on their way to a ring */
#define FILTER_TIDS 256        /* wakers followed for at most this many threads */
#define STACK_RING (4u << 20)  /* per CPU: switch-out samples */
#define TIMES_RING (1u << 20)  /* per CPU: switch records */
#define WAKE_RING (2u << 20)   /* per CPU: wake-ups */
#define PRESENT_MAX 65536      /* threads read at the start */
#define READER_NICE -10
/*
 * Stack bytes a switch-out sample copies unless --stack-size says: a
 * thread that switches tens of thousands of times a second would have
 * the kernel copy 64 KiB at each (gigabytes a second, and the rings
 * full); a deeper stack is read on from memory (stackhole.h).
 */
#define STACK_COPY (8u << 10)

/* One capture's state. */
struct offcap {
	const struct capture_req *q;
	pid_t pid;
	struct recorder *rec;
	struct tnames names;
	struct offwaits w;
	struct perf_events stacks, times, wakes;
	struct stackhole hole;       /* the stack above the copy, read from memory */
	int have_wakes;
	struct tracefs_field prev_state, next_pid, wakee; /* offsets in the raw data; size 0: none */
	struct u64map cpu0;          /* tid -> CPU ns at the start (schedstat) */
	struct u64map short_ns, short_n; /* tid -> waits under --min-wait, their total and count */
	struct u64map filtered;      /* tids in the wake-up filter */
	int refilter;                /* a thread was born: the filter wants it */
	char wakers[64][16];         /* names of wakers in other processes ("comm"), a few */
	unsigned nwakers;
	struct offcpu_stats *st;
	uint64_t t0;
	unsigned char *copy;         /* a sleeping thread's stack, read at the start */
	int no_kstack;               /* /proc's kernel stacks refused: not asked again */
};

static void off_kernel(struct offcap *o, const struct perf_sample *s, const char **names,
		       unsigned *n)
{
	*n = o->q->kernel ? kchain_names(s, names, PERF_CHAIN_MAX) : 0;
	o->st->kernel_stacks += *n > 0;
	recorder_kernel(o->rec, names, *n);
}

/* s unwound (with its kernel frames) into a malloc'd id array, or NULL. */
static uint64_t *off_stack(struct offcap *o, const struct perf_sample *s, uint32_t *nids)
{
	static uint64_t ids[RECORD_IDS_MAX];
	const char *names[PERF_CHAIN_MAX];
	struct thread_image img;
	unsigned nk;
	size_t n;
	uint64_t *v;

	*nids = 0;
	off_kernel(o, s, names, &nk);
	if (ring_sample_image(s, o->stacks.layout.regs_mask, &img) < 0) {
		o->st->no_regs++;
		recorder_kernel(o->rec, NULL, 0);
		return NULL;
	}
	n = recorder_stack(o->rec, &img, ids);
	if (!n || !(v = malloc(n * sizeof(*v))))
		return NULL;
	memcpy(v, ids, n * sizeof(*v));
	*nids = (uint32_t)n;
	return v;
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

static void off_switch_sample(void *ctx, const unsigned char *rec, size_t len)
{
	struct offcap *o = ctx;
	struct offwait_ev e;
	struct perf_sample s;
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
	e.ids = off_stack(o, &s, &e.nids);
	o->st->samples++;
	offwaits_push(&o->w, &e);
}

static void off_switch_record(void *ctx, const unsigned char *rec, size_t len)
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
		if (o->have_wakes && !u64map_get(&o->filtered, sw.tid, &n))
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

static void off_wake(void *ctx, const unsigned char *rec, size_t len)
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
		if (o->q->waker_stacks) {
			struct thread_image img;
			static uint64_t ids[RECORD_IDS_MAX];
			size_t n;

			recorder_kernel(o->rec, names, o->q->kernel ? nk : 0);
			if (ring_sample_image(&s, o->wakes.layout.regs_mask, &img) == 0 &&
			    (n = recorder_stack(o->rec, &img, ids)) && (e.ids = malloc(n * 8))) {
				memcpy(e.ids, ids, n * 8);
				e.nids = (uint32_t)n;
			}
			recorder_kernel(o->rec, NULL, 0);
		}
	} else {
		e.waker = off_foreign(o, s.pid, s.tid);
		e.wpid = s.pid;
		e.wtid = s.tid;
	}
	offwaits_push(&o->w, &e);
}

/* The wake-up filter: the target's threads known so far (at most FILTER_TIDS). */
static void off_filter(struct offcap *o)
{
	char path[64], *f;
	struct dirent *d;
	size_t len = 0, cap = FILTER_TIDS * 24 + 1;
	unsigned n = 0;
	DIR *dir;

	o->refilter = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)o->pid);
	if (!(dir = opendir(path)) || !(f = malloc(cap))) {
		if (dir)
			closedir(dir);
		return;
	}
	f[0] = 0;
	while ((d = readdir(dir))) {
		long tid = strtol(d->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		if (n == FILTER_TIDS) {
			o->st->wakers_unfollowed++;
			continue;
		}
		len += (size_t)snprintf(f + len, cap - len, "%spid == %ld", n ? " || " : "", tid);
		u64map_put(&o->filtered, (uint64_t)tid, 1);
		n++;
	}
	closedir(dir);
	if (n && perf_events_filter(&o->wakes, f) < 0)
		o->st->filter_failed = 1;
	free(f);
}

/* The end of one wait: a sample, or its thread's short waits' total. */
static void off_emit(void *ctx, const struct offwait *ow)
{
	struct offcap *o = ctx;
	struct profile_label_in l[CAPTURE_THREAD_LABELS + 3];
	static uint64_t ids[2 * RECORD_IDS_MAX + 2];
	uint64_t id, v;
	int64_t val[2];
	size_t nl, n = 0;

	if (ow->ns < o->q->min_wait_ns) {
		u64map_put(&o->short_ns, ow->tid, (u64map_get(&o->short_ns, ow->tid, &v) ? v : 0) + ow->ns);
		u64map_put(&o->short_n, ow->tid, (u64map_get(&o->short_n, ow->tid, &v) ? v : 0) + 1);
		return;
	}
	if (ow->ids) {
		memcpy(ids, ow->ids, ow->nids * sizeof(*ids));
		n = ow->nids;
	} else if ((id = recorder_marker_id(o->rec, ow->before
					? "[off-CPU since before the capture]"
					: "[not captured: switch-out stack lost]"))) {
		ids[n++] = id;
	}
	if (o->q->waker_stacks && ow->waker && (id = recorder_marker_id(o->rec, "[woken by]"))) {
		ids[n++] = id;
		if (ow->wids) {
			memcpy(ids + n, ow->wids, ow->nwids * sizeof(*ids));
			n += ow->nwids;
		} else if ((id = recorder_marker_id(o->rec, ow->waker))) {
			ids[n++] = id;
		}
	}
	nl = capture_thread_labels(o->q->labels, tnames_get(&o->names, ow->tid), (pid_t)ow->tid,
				   o->pid, o->q->t->comm, l);
	if (o->q->labels & LABEL_STATE)
		l[nl++] = (struct profile_label_in){ .key = "state",
						     .str = offwait_state_name[ow->state] };
	if (ow->waker && (o->q->labels & LABEL_WAKER)) {
		l[nl++] = (struct profile_label_in){ .key = "waker", .str = ow->waker };
		if (ow->wtid)
			l[nl++] = (struct profile_label_in){ .key = "waker_tid", .num = ow->wtid };
	}
	val[0] = 1;
	val[1] = (int64_t)ow->ns;
	recorder_add_ids(o->rec, ids, n, val, l, nl);
}

/* The waits under --min-wait, one sample per thread. */
static void off_shorts(struct offcap *o)
{
	struct profile_label_in l[CAPTURE_THREAD_LABELS];
	char frame[80];
	uint64_t cnt;
	int64_t val[2];
	size_t i;

	snprintf(frame, sizeof(frame), "[waits under %llu us]",
		 (unsigned long long)(o->q->min_wait_ns / 1000));
	for (i = 0; i < o->short_ns.nslots; i++) {
		struct u64map_slot *sl = &o->short_ns.slots[i];

		if (!sl->used)
			continue;
		cnt = 0;
		u64map_get(&o->short_n, sl->key, &cnt);
		val[0] = (int64_t)cnt;
		val[1] = (int64_t)sl->value;
		o->st->short_waits += cnt;
		recorder_marker_sample(o->rec, frame, val, l,
				       capture_thread_labels(o->q->labels, tnames_get(&o->names,
							     (uint32_t)sl->key), (pid_t)sl->key,
							     o->pid, o->q->t->comm, l));
	}
}

/* A thread's CPU clock (schedstat), or -1. */
static int64_t task_cpu_ns(pid_t pid, uint32_t tid)
{
	char path[64], buf[128];
	uint64_t cpu, queued, slices;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/schedstat", (int)pid, tid);
	if (proc_read(path, buf, sizeof(buf)) <= 0 ||
	    proc_schedstat(buf, &cpu, &queued, &slices) < 0)
		return -1;
	return (int64_t)cpu;
}

/* A thread's state now, from its stat line's third field, as a wait's. */
static enum offwait_state task_state(pid_t pid, uint32_t tid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/stat", (int)pid, tid);
	/* The name may hold ") ": the state follows the last one. */
	if (proc_read(path, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')) || p[1] != ' ')
		return OFFWAIT_OTHER;
	switch (p[2]) {
	case 'S': return OFFWAIT_SLEEPING;
	case 'D': return OFFWAIT_DISK;
	case 'R': return OFFWAIT_PREEMPTED;
	case 'T': case 't': return OFFWAIT_STOPPED;
	default: return OFFWAIT_OTHER;
	}
}

/* tid's syscall line: 0 with nr, sp and pc; else not blocked (or unreadable). */
static int task_syscall(pid_t pid, uint32_t tid, long *nr, uint64_t *sp, uint64_t *pc)
{
	char path[64], buf[256];

	snprintf(path, sizeof(path), "/proc/%d/task/%u/syscall", (int)pid, tid);
	if (proc_read(path, buf, sizeof(buf)) <= 0)
		return -1;
	return proc_syscall(buf, nr, sp, pc);
}

/*
 * A thread off the CPU at the start: its stack now, without stopping it
 * (as the ptrace engine reads a sleeper): sp and pc from its syscall
 * line, the stack from memory above sp, the kernel stack it is blocked in
 * (root); kept only when the syscall line is the same after the copy (it
 * did not run meanwhile). A malloc'd id array, or NULL.
 */
static uint64_t *off_asleep_stack(struct offcap *o, uint32_t tid, uint32_t *nids)
{
	static uint64_t ids[RECORD_IDS_MAX];
	const char *names[KSTACK_MAX];
	struct thread_image img;
	struct kstack ks;
	uint64_t sp, pc, sp2, pc2, *v;
	long nr, nr2;
	size_t n, len;
	unsigned i;

	*nids = 0;
	if (task_syscall(o->pid, tid, &nr, &sp, &pc) != 0 || !o->copy)
		return NULL;
	len = vm_read_upto(o->pid, sp, o->copy, o->q->stack_cap);
	memset(&img, 0, sizeof(img));
	img.regs.r[DWARF_RSP] = sp;
	img.regs.r[DWARF_RIP] = pc;
	img.regs.valid = 1u << DWARF_RSP | 1u << DWARF_RIP;
	if (len) {
		img.nstacks = 1;
		img.stack[0].addr = sp;
		img.stack[0].len = len;
		img.stack[0].bytes = o->copy;
	}
	ks.n = 0;
	if (o->q->kernel && !o->no_kstack && kstack_read(o->pid, (pid_t)tid, &ks) < 0 &&
	    (errno == EACCES || errno == EPERM))
		o->no_kstack = 1;
	for (i = 0; i < ks.n; i++)
		names[i] = ks.name[i];
	recorder_kernel(o->rec, names, ks.n);
	if (task_syscall(o->pid, tid, &nr2, &sp2, &pc2) != 0 || nr2 != nr || sp2 != sp ||
	    pc2 != pc) {
		recorder_kernel(o->rec, NULL, 0);
		return NULL; /* it ran: what was read may be torn */
	}
	n = recorder_stack(o->rec, &img, ids);
	if (!n || !(v = malloc(n * sizeof(*v))))
		return NULL;
	memcpy(v, ids, n * sizeof(*v));
	*nids = (uint32_t)n;
	o->st->asleep_stacks++;
	return v;
}

/* The threads there at the start: their clocks, and each a wait until its first switch. */
static void off_present(struct offcap *o)
{
	char path[64];
	struct dirent *d;
	int64_t cpu;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)o->pid);
	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir)) && o->cpu0.count < PRESENT_MAX) {
		long tid = strtol(d->d_name, NULL, 10);

		if (tid <= 0 || (cpu = task_cpu_ns(o->pid, (uint32_t)tid)) < 0)
			continue;
		u64map_put(&o->cpu0, (uint64_t)tid, (uint64_t)cpu);
		tnames_get(&o->names, (uint32_t)tid);
		enum offwait_state st = task_state(o->pid, (uint32_t)tid);
		uint64_t *ids = NULL;
		uint32_t nids = 0;

		if (st != OFFWAIT_OTHER)
			ids = off_asleep_stack(o, (uint32_t)tid, &nids);
		offwaits_present(&o->w, (uint32_t)tid, st, ids, nids);
	}
	closedir(dir);
}

/*
 * Threads never switched during the window: running throughout, or
 * asleep throughout. The time their clock does not account for is one
 * wait from before the capture to its end.
 */
static void off_unswitched(struct offcap *o, uint64_t window)
{
	int64_t c1;
	uint64_t used;
	size_t i;

	for (i = 0; i < o->cpu0.nslots; i++) {
		struct u64map_slot *sl = &o->cpu0.slots[i];

		if (!sl->used || offwaits_seen(&o->w, (uint32_t)sl->key))
			continue;
		if ((c1 = task_cpu_ns(o->pid, (uint32_t)sl->key)) < 0)
			continue; /* it ended: its end was a switch we did not see */
		used = (uint64_t)c1 > sl->value ? (uint64_t)c1 - sl->value : 0;
		if (used < window && offwaits_unswitched(&o->w, (uint32_t)sl->key, window - used) == 0)
			o->st->unswitched++;
	}
}

/* Open the three event sets. 0, or an EXIT_* code after saying why. */
static int off_open(struct offcap *o, const struct perf_access *a)
{
	const struct capture_req *q = o->q;
	struct perf_cfg cfg;
	char why[200];
	int kernel_names = q->kernel && kallsyms_get() != NULL;

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
	if (perf_events_init(&o->wakes, &cfg) == 0) {
		o->have_wakes = 1;
		off_filter(o);
	}
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

	perf_events_drain(&o->times, off_switch_record, o);
	perf_events_drain(&o->stacks, off_switch_sample, o);
	if (o->have_wakes)
		perf_events_drain(&o->wakes, off_wake, o);
	if (!last)
		offwaits_run(&o->w, now > ORDER_SLACK_NS ? now - ORDER_SLACK_NS : 0);
}

/* The window: the rings read as they fill, until the deadline, a stop signal or the target's end. */
static void off_window(struct offcap *o, struct capture_report *rep)
{
	const struct capture_req *q = o->q;
	struct pollfd pfd[2 + 3 * 256];
	struct perf_events *sets[3] = { &o->times, &o->stacks, &o->wakes };
	uint64_t now, deadline = o->t0 + q->duration_ns;
	int i, s, n = 0, sigfd, pidfd;

	sigfd = capture_stop_open();
	pidfd = (int)syscall(SYS_pidfd_open, o->pid, 0);
	pfd[n].fd = sigfd;
	pfd[n++].events = POLLIN;
	pfd[n].fd = pidfd;
	pfd[n++].events = POLLIN;
	for (s = 0; s < 3; s++)
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
			off_filter(o);
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
	offwaits_init(&o.w, 0, off_emit, &o);
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
	target_say_capture(o.pid, q->t->comm, 0, q->what, q->duration_ns, 0,
			   o.have_wakes ? "switch events, wake-ups" : "switch events");
	/* The stacks of the threads asleep now first (reading them takes a while): the window
	   begins when the events are enabled. */
	off_present(&o);
	rep->start_real_ns = clock_real_ns();
	o.t0 = clock_mono_ns();
	offwaits_start(&o.w, o.t0);
	/* Wake-ups, then switch-out samples, then switch records: each one a wait needs is on
	   before the record that begins it (a sample opens a wait; an out record alone, one
	   without its stack). */
	if (o.have_wakes)
		perf_events_enable(&o.wakes);
	perf_events_enable(&o.stacks);
	perf_events_enable(&o.times);
	off_window(&o, rep);
	perf_events_disable(&o.stacks);
	perf_events_disable(&o.times);
	if (o.have_wakes)
		perf_events_disable(&o.wakes);
	t1 = clock_mono_ns();
	capture_nice_end(&cx);
	off_drain(&o, 1);
	offwaits_end(&o.w, t1);
	if (!rep->gone)
		off_unswitched(&o, t1 - o.t0);
	off_shorts(&o);
	rep->off.waits = o.w.st.waits;
	rep->off.no_stack = o.w.st.no_stack;
	rep->off.woken = o.w.st.woken;
	rep->off.dropped = o.w.st.dropped;
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
	recorder_lines(o.rec, q->debug, q->line_cache);
	rep->rec = *recorder_stats(o.rec);
	code = capture_close(&cx, o.pid, q->t->comm, 0, out);
out:
	off_release(&o);
	capture_release(&cx);
	return code;
}

const struct source source_offcpu = { "offcpu", capture_offcpu, SOURCE_WAITS };
