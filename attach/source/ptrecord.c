/*
 * ptrecord.c — a ptrace snapshot as profile samples (ptrecord.h): its
 * labels (the thread's, its state and call, the program's at the time its
 * policy chose), its stack or the thread's last stack of a state for a
 * repeat, and a wall sample split by the thread's clocks into its running,
 * runnable and sleeping parts.
 */
#include <stdio.h>
#include <string.h>

#include "attach/ptrace/kstack.h"
#include "attach/ptrace/syscalls.h"
#include "attach/source/capture.h"
#include "attach/source/labelsrc.h"
#include "attach/source/ptrecord.h"
#include "attach/source/record.h"

/* The recorder's key for a thread's last stack found running (its tid's is its last stack). */
#define RUNNING_KEY(tid) ((uint64_t)(uint32_t)(tid) | 1ull << 32)
/* ... and for its last stack found asleep. */
#define SLEEPING_KEY(tid) ((uint64_t)(uint32_t)(tid) | 2ull << 32)

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

/*
 * A sample's labels: the thread's, its state and the call it sleeps in
 * (syscall < 0: none), the program's own at time at. Returns how many;
 * nr holds a call's name when it has no other, text the program's strings.
 */
static size_t snapshot_labels(struct label_src *lab, unsigned labels,
			      const struct snapshot *snap, uint64_t at, char state, long syscall,
			      struct profile_label_in *l, char nr[32], struct labelsrc_text *text)
{
	const char *sc;
	size_t nl;

	nl = capture_thread_labels(labels, snap->name, snap->tid, snap->pid, snap->comm, l);
	if (labels & LABEL_STATE) {
		l[nl].key = "state";
		l[nl++].str = state_name(state);
	}
	if ((labels & LABEL_SYSCALL) && syscall >= 0) {
		sc = syscall_name(syscall);
		if (!sc) {
			snprintf(nr, 32, "syscall %ld", syscall);
			sc = nr;
		}
		l[nl].key = "syscall";
		l[nl++].str = sc;
	}
	if (snap->tid)
		nl += labelsrc_at(lab, (uint32_t)snap->tid, at, l + nl, LABELSRC_MAX, text);
	return nl;
}

/*
 * The time whose program labels a sample's CPU gets (carried: all of the
 * sample is CPU, or this part is): the policy's choice (ran_ns: where the
 * thread ran, policies.c), else the sample's own time.
 */
static uint64_t labels_time(const struct snapshot *snap, int carried)
{
	return carried && snap->ran_ns ? snap->ran_ns : snap->time_ns;
}

/* The labels array of one sample: the thread's, state, syscall, the program's. */
#define SNAP_LABELS (CAPTURE_THREAD_LABELS + 2 + LABELSRC_MAX)

static void record_whole(struct recorder *rec, struct label_src *lab,
			 struct stack_hints *hints, unsigned labels, struct snapshot *snap,
			 const int64_t *v)
{
	size_t used;
	unsigned k;
	int overran, complete;

	struct profile_label_in l[SNAP_LABELS];
	struct labelsrc_text text;
	char nr[32];
	size_t nl = 0;

	memset(l, 0, sizeof(l));
	nl = snapshot_labels(lab, labels, snap,
			     labels_time(snap, snap->how == SNAP_REPEAT || !snap->split), snap->state,
			     snap->how == SNAP_SYSCALL || snap->how == SNAP_REPEAT ? snap->syscall
										   : -1,
			     l, nr, &text);
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
		/*
		 * Running on its last stack found running, asleep on its last
		 * sleep: a stop that landed in a sleep leaves the thread's last
		 * stack a sleeping one. Its last stack when it has none of them.
		 */
		if (((snap->repeat_running || snap->state == 'R') &&
		     recorder_repeat(rec, RUNNING_KEY(snap->tid), v, l, nl) == 0) ||
		    (snap->state == 'S' &&
		     recorder_repeat(rec, SLEEPING_KEY(snap->tid), v, l, nl) == 0) ||
		    recorder_repeat(rec, (uint64_t)snap->tid, v, l, nl) == 0)
			return;
		/* No earlier stack (the engine repeats only stacked threads): named, never stackless. */
		recorder_marker_sample(rec, "[not captured: no earlier stack to repeat]", v, l, nl);
		return;
	}
	if (snap->kstack) {
		const char *kn[KSTACK_MAX];

		for (k = 0; k < snap->kstack->n; k++)
			kn[k] = snap->kstack->name[k];
		recorder_kernel(rec, kn, snap->kstack->n);
	}
	recorder_add(rec, (uint64_t)snap->tid, &snap->img, v, l, nl);
	if ((snap->how == SNAP_STOPPED && snap->state == 'R' && !snap->slid) || snap->ran_here)
		recorder_remember(rec, RUNNING_KEY(snap->tid));
	else if (snap->how == SNAP_SYSCALL)
		recorder_remember(rec, SLEEPING_KEY(snap->tid));
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
 * One part of a split wall sample (policies.c, split_elapsed) on the
 * thread's stack found in a given state: key's, else its last stack,
 * else a named marker. Its CPU (state 'R') never falls back to another
 * state's stack: a thread no stop has found running yet (its every stop
 * landed in its sleep: a loaded machine delays our stops past a short
 * burst) would show running in the call it sleeps in.
 */
static void record_part(struct recorder *rec, struct label_src *lab, unsigned labels,
			const struct snapshot *snap, uint64_t key, char state, long syscall,
			int64_t count, uint64_t ns)
{
	struct profile_label_in l[SNAP_LABELS];
	struct labelsrc_text text;
	int64_t v[2] = { count, (int64_t)ns };
	char nr[32];
	size_t nl;

	if (!ns && !count)
		return;
	memset(l, 0, sizeof(l));
	nl = snapshot_labels(lab, labels, snap, labels_time(snap, state == 'R'), state, syscall, l,
			     nr, &text);
	if (recorder_repeat(rec, key, v, l, nl) == 0 ||
	    (state != 'R' && recorder_repeat(rec, (uint64_t)snap->tid, v, l, nl) == 0))
		return;
	recorder_marker_sample(rec,
			       state == 'R' ? "[not captured: running, no stop found it running]"
					    : "[not captured: no earlier stack to repeat]",
			       v, l, nl);
}

/*
 * A wall sample whose span the thread's clocks split (snap->split): the
 * part of the sample's own state is recorded as the sample (its stack,
 * its ticks), the others on the thread's stack of their state, with no
 * ticks of their own: the CPU on its last stack found running, the wait
 * for a CPU on this sample's stack, the sleep on its last stack found
 * asleep. The thread's last running and sleeping stacks are remembered
 * as its samples come (record_whole).
 */
static void record_split(struct recorder *rec, struct label_src *lab,
			 struct stack_hints *hints, unsigned labels, struct snapshot *snap)
{
	uint64_t w = snap->weight > 0 ? (uint64_t)snap->weight : 0;
	uint64_t c = snap->split_cpu, q = snap->split_queued, rest = w - c - q;
	uint64_t tid = (uint64_t)snap->tid;
	int running = snap->state == 'R' || (snap->how == SNAP_REPEAT && snap->repeat_running);
	int queued = !running && snap->state == SNAP_STATE_QUEUED;
	int64_t v[2] = { snap->count, (int64_t)(running ? c : queued ? q : rest) };

	record_whole(rec, lab, hints, labels, snap, v);
	if (!running)
		record_part(rec, lab, labels, snap, RUNNING_KEY(tid), 'R', -1, 0, c);
	if (!queued)
		record_part(rec, lab, labels, snap, tid, SNAP_STATE_QUEUED, -1, 0, q);
	if (running || queued)
		record_part(rec, lab, labels, snap, SLEEPING_KEY(tid), 'S', snap->rest_syscall, 0,
			    rest);
}

void ptrecord_snapshot(struct recorder *rec, struct label_src *lab, struct stack_hints *hints,
		       unsigned labels, struct snapshot *snap)
{
	int64_t v[2] = { snap->count, snap->weight };

	if (snap->split && snap->how != SNAP_LOST && snap->how != SNAP_MARKER)
		record_split(rec, lab, hints, labels, snap);
	else
		record_whole(rec, lab, hints, labels, snap, v);
}
