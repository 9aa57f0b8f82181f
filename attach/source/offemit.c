/*
 * offemit.c — the off-CPU source's samples (offcap.h): each wait one
 * sample, its stack (or a marker saying why there is none), the waker's
 * stack above "[woken by]" when asked, the labels; short waits folded
 * per thread; and the threads there at the start, read where they are
 * without a stop (a sleeper's stack from its syscall line and memory, as
 * the ptrace engine reads one), so that a wait begun before the window,
 * or lasting all of it, has its stack.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/capture/target.h"
#include "attach/ptrace/kstack.h"
#include "attach/source/offcap.h"
#include "attach/source/record.h"
#include "attach/source/result.h"
#include "common/proc.h"
#include "common/vmread.h"
#include "model/profile.h"

/* The end of one wait: a sample, or its thread's short waits' total. */
void offemit_wait(void *ctx, const struct offwait *ow)
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
void offemit_shorts(struct offcap *o)
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
	const char *names[KSTACK_MAX];
	struct thread_image img;
	struct kstack ks;
	uint64_t sp, pc, sp2, pc2, *v;
	long nr, nr2;
	size_t len;
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
	if ((v = recorder_stack_copy(o->rec, &img, nids)))
		o->st->asleep_stacks++;
	return v;
}

/* The threads there at the start: their clocks, and each a wait until its first switch. */
void offemit_present(struct offcap *o)
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
void offemit_unswitched(struct offcap *o, uint64_t window)
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
