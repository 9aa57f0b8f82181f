/*
 * stopcopy.c — sampling threads. A running thread: PTRACE_SEIZE,
 * PTRACE_INTERRUPT, waitpid for its stop, PTRACE_GETREGS, one
 * process_vm_readv of as much stack as its hint says, PTRACE_DETACH; the
 * pause is timed from the interrupt to the detach and nothing else happens
 * inside it (names and states are read afterwards). A sleeping
 * thread: /proc/PID/task/TID/syscall gives its stack pointer and program
 * counter, process_vm_readv its stack; it is never stopped. A sleeping
 * thread whose CPU clock has not moved since it was last read is where it
 * was: it costs one pread. Also the session's poll (signals, late stops,
 * the process's exit), since late stops are stops to copy.
 *
 * This is the second half of the session module (session.h): session.c
 * owns the session's life and thread list and never calls in here.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach/ptrace/chldwake.h"
#include "attach/ptrace/kstack.h"
#include "attach/ptrace/session.h"
#include "attach/ptrace/stackcopy.h"
#include "attach/capture/target.h"
#include "common/proc.h"
#include "common/watchdog.h"

/* Kernel-internal returns of a sleep that a signal or a stop broke. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514 /* restart unless a handler ran */
#define ERESTART_RESTARTBLOCK 516

static void pause_record(struct session *s, uint64_t ns)
{
	uint64_t b = ns / 1000;

	s->stats.stops++;
	s->stats.pause_ns_sum += ns;
	if (ns > s->stats.pause_ns_max)
		s->stats.pause_ns_max = ns;
	s->stats.pause_hist[b < SESSION_PAUSE_BUCKETS ? b : SESSION_PAUSE_BUCKETS]++;
}

static struct snapshot *snapshot_new(struct session *s, struct thread *t, int how)
{
	struct snapshot *snap = calloc(1, sizeof(*snap));
	int bytes = how == SNAP_STOPPED || how == SNAP_SYSCALL;

	if (!snap)
		return NULL;
	snap->stack = bytes ? malloc(s->stack_cap) : NULL;
	if (bytes && !snap->stack) {
		free(snap);
		return NULL;
	}
	snap->tid = t->tid;
	snap->count = 1;
	snap->how = how;
	snap->syscall = -1;
	snap->state = '?';
	return snap;
}

/*
 * Whether a thread stopped inside syscall orig_rax with result rax was
 * asleep there: its sleep was broken by the stop (a syscall that finished
 * has its own result). Such a stop shows where the thread waits, not where
 * it ran.
 */
static int stopped_asleep(long orig_rax, long rax)
{
	return orig_rax >= 0 && (rax == -EINTR || rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
				 rax == -ERESTARTNOHAND || rax == -ERESTART_RESTARTBLOCK);
}

/*
 * Where a stop asked of a running thread waits for its next kernel entry
 * (a PVM guest: the kick interrupts no user code, and a spinning thread
 * runs on until the next clock tick), a thread that makes system calls
 * stops at the next one: an event loop's samples went to the clock read
 * after its handler, far beyond its share. Such a stop is not where the
 * thread was; its CPU is carried on like a sleeping one's.
 * Only a call that completed is taken for one: a call our stop broke
 * (ppoll scanning 400 descriptors) was running when asked. The hosts are
 * told apart by the stops in user code of threads running when asked: a
 * quarter or more ran on past KICK_LATE_NS there, none where kicks work.
 */
#define KICK_LATE_NS 50000ull /* a kick that works stops a running thread within a few us */
#define KICK_LATE_MIN 8       /* user-code stops of running threads seen before the host is judged */
#define SLIDE_NS 20000ull     /* ran this long before stopping in a syscall: it came later */

/*
 * Whether a thread put on a CPU since the look before our interrupt was
 * waiting for one at that look: runnable, not running and not asleep.
 * Its run-queue time (schedstat) grows by a whole wait when the wait ends;
 * a wait that ended since the look and lasted about as long as the time
 * since the look (less what it ran once back: with our stop pending it
 * stops on its way back to user space, tens of us on a PVM guest) began
 * before the look. A thread running at the look and preempted later
 * waited less than that, unless preempted within QUEUED_RAN_NS of it.
 */
#define QUEUED_RAN_NS 100000ull

static int queued_since(const struct thread *t)
{
	uint64_t now = clock_mono_ns(), dt = now > t->intr_ns ? now - t->intr_ns : 0;
	uint64_t q = t->queued_ns > t->intr_queued_ns ? t->queued_ns - t->intr_queued_ns : 0;

	return q > 0 && q + QUEUED_RAN_NS >= dt;
}

/*
 * A timer sleep arms its timer and sleeps within microseconds of its
 * entry: one our stop broke after the thread ran SLIDE_NS since we asked
 * was entered after we asked (a slide), where a broken ppoll may have been
 * scanning its descriptors all along. Found in one still on the CPU it had
 * at the look, it was entered after we asked on any host, judged or not:
 * a wall sample stands for where the thread ran at the look
 * (t_wall_burst), a CPU sample's CPU is carried like a slide's. Kept
 * where it landed until the host was judged, an event loop that is
 * mostly asleep at the ticks (few user-code stops to judge by) put
 * much of its CPU in the sleep (t_cpu_evloop; doc/measurements.md).
 */
static int timer_sleep(long nr)
{
	return nr == SYS_nanosleep || nr == SYS_clock_nanosleep;
}

/*
 * Calls that return within microseconds and never sleep (the clock and
 * id reads a vDSO falls back to, or makes as calls): a stop found in one
 * of them after the thread ran SLIDE_NS since we asked came later than
 * asked on any host, judged or not. Before a host is judged (the first
 * KICK_LATE_MIN user-code stops) the stops of an event loop's clock read
 * after its handler all counted where they landed: under a slow tracer
 * the clock read took much of the handler's share.
 */
static int fast_call(long nr)
{
	switch (nr) {
	case SYS_clock_gettime: case SYS_clock_getres: case SYS_gettimeofday: case SYS_time:
	case SYS_getcpu: case SYS_getpid: case SYS_gettid: case SYS_getppid:
	case SYS_getuid: case SYS_geteuid: case SYS_getgid: case SYS_getegid:
		return 1;
	default:
		return 0;
	}
}

static int kicks_late(const struct session *s)
{
	return s->stats.user_stops >= KICK_LATE_MIN &&
	       4 * s->stats.user_stops_late > s->stats.user_stops;
}

/* Registers and stack of a thread in a ptrace stop; the EINTR repair. 0 or -1. */
static int copy_stopped(struct session *s, struct thread *t, int ours, struct snapshot *snap)
{
	struct user_regs_struct ur;
	uint64_t cpu = 0, before = t->intr_cpu_ns, slices = t->intr_slices;
	int clock;

	if (ptrace(PTRACE_GETREGS, t->tid, 0, &ur) < 0)
		return -1;
	/*
	 * Its time while it stands still: the program's labels are looked up
	 * at it, and a thread released first had pushed its next request's
	 * labels by the time of a later clock read (a stop at a call's exit
	 * just before a push, where a busy guest's stops crowd).
	 */
	snap->time_ns = clock_mono_ns();
	snap->asked_ns = t->intr_ns;
	/* One pread inside the pause: the thread's clock against the look before our interrupt. */
	clock = s->want_look && before && thread_read_cpu(&s->threads, t, &cpu) == 0;
	/* A thread that ran after we asked was running then (one waiting for a CPU runs 0). */
	if ((long)ur.orig_rax < 0 && clock && cpu > before) {
		s->stats.user_stops++;
		s->stats.user_stops_late += cpu > before + KICK_LATE_NS;
	}
	if (clock && t->slices != slices)
		snap->queued = queued_since(t);
	if ((long)ur.orig_rax >= 0) {
		/*
		 * Stopped inside a syscall. If it was put on a CPU since the
		 * look just before our interrupt, it was asleep or waiting for
		 * a CPU when asked to stop (our interrupt woke it, or it woke
		 * only to finish the call: a loop woken from clock_nanosleep
		 * behind a busy thread). If not, it was on a CPU running the
		 * call's kernel side (entering a sleep, or leaving one): a true
		 * CPU sample, unless the kick waited and it ran on into this
		 * call. Without the look, the result code says whether a sleep
		 * was broken.
		 */
		if (clock) {
			int ran;

			snap->slept = t->slices != slices;
			ran = !snap->slept && cpu > before + SLIDE_NS;
			snap->ran_on = ran && (kicks_late(s) || fast_call((long)ur.orig_rax));
			snap->slid = snap->ran_on && (!stopped_asleep((long)ur.orig_rax, (long)ur.rax) ||
						      timer_sleep((long)ur.orig_rax));
			snap->ran_to_sleep = ran && timer_sleep((long)ur.orig_rax);
			s->stats.slid += (uint64_t)(snap->slid || snap->ran_to_sleep);
		} else {
			snap->slept = stopped_asleep((long)ur.orig_rax, (long)ur.rax);
		}
		snap->slept_nr = (long)ur.orig_rax;
		snap->in_timer_sleep = timer_sleep((long)ur.orig_rax);
		snap->in_call = 1;
	}
	if ((t->flags & THREAD_TORN) && snap->slept) {
		/* Stopped because its reads tore: where it sleeps, as a read would say. */
		snap->how = SNAP_SYSCALL;
		snap->syscall = snap->slept_nr;
		snap->slept = snap->ran_on = snap->slid = snap->ran_to_sleep = snap->queued = 0;
	}
	if (ours && (long)ur.orig_rax >= 0 && (long)ur.rax == -EINTR) {
		/* Our stop broke a syscall that cannot restart: make it restart. */
		ur.rax = (unsigned long long)-ERESTARTNOHAND;
		if (ptrace(PTRACE_SETREGS, t->tid, 0, &ur) == 0)
			s->stats.eintr_fixed++;
		ur.rax = (unsigned long long)-EINTR;
	}
	stackcopy_regs(&snap->img.regs, &ur);
	stackcopy_image(s, t->tid, ur.rsp, ur.rip, snap);
	return 0;
}

/*
 * Handle a wait status of a seized thread t: when it is stopped and snap is
 * not NULL, copy it into snap; release it either way (detach, passing on a
 * signal it stopped for). Returns 1 when copied, 0 when released without a
 * copy, -1 when the thread is gone.
 */
static int stopcopy_reap(struct session *s, struct thread *t, int status, struct snapshot *snap)
{
	int sig = 0, ours = 0, copied = 0;
	pid_t tid = t->tid;

	if ((t->flags & (THREAD_HELD | THREAD_WANTED)) == THREAD_HELD && s->late)
		s->late--;
	t->flags &= ~(THREAD_HELD | THREAD_WANTED);
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		threads_remove(&s->threads, tid);
		return -1;
	}
	if (!WIFSTOPPED(status))
		return 0;
	/* Its way back onto a CPU after our stop is not one of its waits. */
	t->slices_waited++;
	if ((status >> 16) == PTRACE_EVENT_STOP) {
		/* Our interrupt (SIGTRAP), or a group stop (SIGSTOP...), which detach keeps. */
		ours = WSTOPSIG(status) == SIGTRAP;
	} else if ((status >> 16) == 0) {
		sig = WSTOPSIG(status); /* a signal arrived first: it must go on */
		s->stats.signals_passed++;
	}
	if (snap && copy_stopped(s, t, ours, snap) == 0)
		copied = 1;
	/*
	 * Detaching cancels the interrupt still pending after a signal stop.
	 * It fails when a SIGKILL (the process's exit) woke the thread from
	 * its stop: then it dies still traced, a zombie until we reap it, and
	 * the process's exit is not reported until then. session_poll() does.
	 */
	if (ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig) < 0 && errno == ESRCH) {
		t->flags |= THREAD_HELD;
		s->late++;
	}
	return copied;
}

/*
 * Give back the part of the stack buffer the copy did not fill. Each
 * snapshot takes the whole cap (64K by default) before its copy, and a
 * thread asleep copies a few K: untrimmed, a snapshot of many threads
 * grew the tracer's heap a cap at a time, each growth a system call, for
 * a small fraction of that in stacks.
 */
static void snapshot_trim(struct session *s, struct snapshot *snap)
{
	size_t used = 0, off[IMAGE_MAX_REGIONS] = { 0 };
	unsigned char *p;
	unsigned i;

	if (!snap->stack)
		return;
	for (i = 0; i < snap->img.nstacks && i < IMAGE_MAX_REGIONS; i++) {
		off[i] = (size_t)(snap->img.stack[i].bytes - snap->stack);
		if (off[i] + snap->img.stack[i].len > used)
			used = off[i] + snap->img.stack[i].len;
	}
	if (used > s->stack_cap / 2 || !(p = realloc(snap->stack, used ? used : 1)))
		return;
	snap->stack = p;
	for (i = 0; i < snap->img.nstacks && i < IMAGE_MAX_REGIONS; i++)
		snap->img.stack[i].bytes = p + off[i];
}

static void emit_snapshot(struct session *s, struct thread *t, struct snapshot *snap,
			  session_emit_fn *emit, void *ctx)
{
	int named = 0;

	if (!snap->time_ns)
		snap->time_ns = clock_mono_ns();
	/* Stopped because it was running or runnable when looked at (/proc). */
	if (snap->how == SNAP_STOPPED)
		snap->state = snap->queued ? SNAP_STATE_QUEUED : 'R';
	else if (snap->how == SNAP_LOST)
		snap->state = 'R';
	else if (snap->how == SNAP_REPEAT)
		snap->state = snap->repeat_state ? snap->repeat_state
			      : t->last_state ? t->last_state : '?';
	else if (s->want_state)
		snap->state = thread_read_state(&s->threads, t, &named);
	/* A running thread's ticks repeated (wall) are running ones, not "unknown". */
	if (snap->how != SNAP_REPEAT)
		t->last_state = snap->state;
	if (!named)
		thread_read_name(&s->threads, t);
	snapshot_trim(s, snap);
	memcpy(snap->name, t->name, sizeof(snap->name));
	emit(ctx, t, snap);
}

void session_repeat_as(struct session *s, struct thread *t, uint32_t count, uint64_t time_ns,
		       char state, session_emit_fn *emit, void *ctx)
{
	struct snapshot *snap = snapshot_new(s, t, SNAP_REPEAT);

	if (!snap)
		return;
	snap->count = count;
	snap->time_ns = time_ns;
	snap->repeat_state = state;
	if (t->flags & THREAD_ASLEEP)
		snap->syscall = t->asleep_nr;
	emit_snapshot(s, t, snap, emit, ctx);
}

void session_repeat(struct session *s, struct thread *t, uint32_t count, uint64_t time_ns,
		    session_emit_fn *emit, void *ctx)
{
	session_repeat_as(s, t, count, time_ns, 0, emit, ctx);
}

/*
 * The stop of a thread whose batch moved on came (status from waitpid):
 * copy it and give it to s->defer_emit when it was deferred, else just
 * release it.
 */
static void stopcopy_late(struct session *s, struct thread *t, int status)
{
	struct snapshot *snap = NULL;
	pid_t tid = t->tid;

	if ((t->flags & THREAD_DEFERRED) && s->defer_emit)
		snap = snapshot_new(s, t, SNAP_STOPPED);
	t->flags &= ~THREAD_DEFERRED;
	if (stopcopy_reap(s, t, status, snap) == 1 && (t = threads_get(&s->threads, tid))) {
		/*
		 * Not in the pause histogram: the time since the interrupt was
		 * mostly spent waiting for a CPU, not stopped.
		 */
		s->stats.deferred++;
		emit_snapshot(s, t, snap, s->defer_emit, s->defer_ctx);
		return;
	}
	snapshot_free(snap);
}

static void session_drain_signals(struct session *s)
{
	struct signalfd_siginfo si;
	int chld = 0;

	chldwake_drain(s->wakefd);
	while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP)
			s->stop_signal = (int)si.ssi_signo;
		chld |= si.ssi_signo == SIGCHLD;
	}
	/* It may have been another tracer's stop (--children): they look too. */
	if (chld)
		chldwake_broadcast(s->wakeslot);
	if (!s->stop_signal)
		s->stop_signal = watchdog_stop_signal(); /* the watchdog takes them when it runs */
}

/*
 * Threads whose stop came after their batch gave up: release them. One
 * that was exiting stays a zombie until its tracer (us) reaps it, and
 * until then the pidfd does not report the exit, and an exec waits for it
 * (rescue.h). One the watcher reaped for us is gone.
 */
static void reap_late(struct session *s)
{
	pid_t *tids, r;
	uint32_t i, n;
	int status;

	if (!s->late || !(tids = malloc((s->threads.count + 1) * sizeof(*tids))))
		return;
	n = threads_tids(&s->threads, tids, s->threads.count);
	for (i = 0; i < n && s->late; i++) {
		struct thread *t = threads_get(&s->threads, tids[i]);

		if (!t || (t->flags & (THREAD_HELD | THREAD_WANTED)) != THREAD_HELD)
			continue;
		r = waitpid(tids[i], &status, __WALL | WNOHANG);
		if (r == tids[i]) {
			stopcopy_late(s, t, status);
		} else if (r < 0 && errno == ECHILD) {
			t->flags &= ~(THREAD_HELD | THREAD_DEFERRED);
			s->late--;
			threads_remove(&s->threads, tids[i]);
		}
	}
	free(tids);
}

void session_poll(struct session *s)
{
	session_drain_signals(s);
	if (s->doubt) {
		char p[64], buf[256];

		/* The start-up check again: refused now means the rights are gone. */
		s->doubt = 0;
		snprintf(p, sizeof(p), "/proc/%d/syscall", (int)s->pid);
		if (proc_read(p, buf, sizeof(buf)) < 0 && (errno == EACCES || errno == EPERM))
			s->lost = 1;
		else if (target_traced_by_other(s->pid))
			s->lost = 1;
	}
	reap_late(s);
	s->stats.exec_rescues = __atomic_load_n(&s->rescue.reaped, __ATOMIC_RELAXED);
	if (s->pidfd >= 0) {
		struct pollfd pfd = { .fd = s->pidfd, .events = POLLIN };

		if (poll(&pfd, 1, 0) > 0)
			s->gone = 1;
	}
}

/* How many threads are deferred; their tids in tids (room for cap). */
static uint32_t deferred_tids(struct session *s, pid_t *tids, uint32_t cap)
{
	uint32_t i, n, k = 0;

	n = threads_tids(&s->threads, tids, cap);
	for (i = 0; i < n; i++) {
		struct thread *t = threads_get(&s->threads, tids[i]);

		if (t && (t->flags & THREAD_DEFERRED))
			tids[k++] = tids[i];
	}
	return k;
}

void session_await_deferred(struct session *s, uint64_t wait_ns)
{
	struct pollfd pfd[2] = { { .fd = s->sigfd, .events = POLLIN },
				 { .fd = s->wakefd, .events = POLLIN } };
	uint64_t deadline = clock_mono_ns() + wait_ns, now;
	struct snapshot *snap;
	struct thread *t;
	uint32_t i, n, cap = s->threads.count + 1;
	pid_t *tids;

	if (!s->late || !s->defer_emit || !(tids = malloc(cap * sizeof(*tids))))
		return;
	chldwake_waiting(s->wakeslot, 1);
	while ((n = deferred_tids(s, tids, cap)) && !s->stop_signal && !s->gone && !s->execed) {
		if ((now = clock_mono_ns()) >= deadline)
			break;
		/* A stop raises a SIGCHLD, which makes the signalfd readable; a stop signal is looked for each 100 ms. */
		poll(pfd, 2, deadline - now > 100000000u ? 100 : (int)((deadline - now + 999999) / 1000000));
		session_poll(s);
	}
	chldwake_waiting(s->wakeslot, 0);
	n = deferred_tids(s, tids, cap);
	for (i = 0; i < n; i++) {
		if (!(t = threads_get(&s->threads, tids[i])))
			continue;
		/* Still held: released when its stop comes, as any late one. */
		t->flags &= ~THREAD_DEFERRED;
		s->stats.stop_timeouts++;
		if ((snap = snapshot_new(s, t, SNAP_LOST)))
			emit_snapshot(s, t, snap, s->defer_emit, s->defer_ctx);
	}
	free(tids);
}

/*
 * Seize t and ask it to stop. 0, or -1 (gone, or another tracer has it).
 * The pause is timed from the interrupt: a seized thread runs on.
 */
static int seize(struct session *s, struct thread *t)
{
	uint64_t cpu;
	int r;

	/* Our zombies first: an exec in progress waits for them, and the seize for the exec. */
	reap_late(s);
	rescue_enter(&s->rescue);
	r = ptrace(PTRACE_SEIZE, t->tid, 0, 0);
	rescue_leave(&s->rescue);
	if (r < 0) {
		if (errno == EPERM) {
			/* Exiting, or another tracer came, or its credentials changed. */
			s->stats.seize_failures++;
			s->doubt = 1;
		}
		return -1;
	}
	/* The look closest to the interrupt (see copy_stopped); a failed one changes nothing. */
	t->intr_cpu_ns = 0;
	if (s->want_look && thread_read_cpu(&s->threads, t, &cpu) == 0) {
		t->intr_cpu_ns = cpu;
		t->intr_slices = t->slices;
		t->intr_queued_ns = t->queued_ns;
	}
	t->intr_ns = clock_mono_ns();
	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0) {
		/* Seized but not interruptible: it is exiting; session_poll() reaps it. */
		t->flags |= THREAD_HELD;
		s->late++;
		return -1;
	}
	t->flags |= THREAD_HELD | THREAD_WANTED;
	return 0;
}

/* A stop arrived for a wanted thread: copy, release, emit. */
static void batch_stop(struct session *s, struct thread *t, int status, session_emit_fn *emit,
		       void *ctx)
{
	struct snapshot *snap = snapshot_new(s, t, SNAP_STOPPED);
	pid_t tid = t->tid;
	int r;

	r = stopcopy_reap(s, t, status, snap);
	if (r != -1)
		pause_record(s, clock_mono_ns() - t->intr_ns);
	if (r == 1 && (t = threads_get(&s->threads, tid)))
		emit_snapshot(s, t, snap, emit, ctx);
	else
		snapshot_free(snap);
}

/*
 * Whether t is still where it was read asleep: in syscall nr at sp and pc,
 * and (when its CPU clock was read before) without having run since. A
 * thread that woke during the copy may have replaced frames the copy got
 * half of: on mariadbd under load, 2 of ~9000 sleeping reads gave a caller
 * that was a stack canary or a heap address. One more pread or two per
 * read, only for threads that moved since their last sample.
 */
static int still_asleep(struct session *s, struct thread *t, int have_cpu, uint64_t cpu, long nr,
			uint64_t sp, uint64_t pc)
{
	uint64_t sp2 = 0, pc2 = 0, cpu2 = 0;
	long nr2 = -1;

	if (thread_read_syscall(&s->threads, t, &nr2, &sp2, &pc2) != 0 || nr2 != nr || sp2 != sp ||
	    pc2 != pc)
		return 0;
	return !have_cpu || (thread_read_cpu(&s->threads, t, &cpu2) == 0 && cpu2 == cpu);
}

/*
 * Read a sleeping thread without stopping it. 0 when emitted, -1 when it
 * woke meanwhile (nothing emitted; the caller looks again).
 */
/*
 * The kernel stack of a thread read asleep (want_kstack): one read of its
 * /proc file, inside the same check that it stayed asleep. A refusal (not
 * root) turns it off for the session, counted once.
 */
static void read_kstack(struct session *s, struct thread *t, struct snapshot *snap)
{
	if (!s->want_kstack || !(snap->kstack = malloc(sizeof(*snap->kstack))))
		return;
	if (kstack_read(s->pid, t->tid, snap->kstack) < 0 || !snap->kstack->n) {
		if (errno == EACCES || errno == EPERM || errno == ENOENT) {
			s->want_kstack = 0;
			s->stats.kstack_refused++;
		}
		free(snap->kstack);
		snap->kstack = NULL;
		return;
	}
	s->stats.kstacks++;
}

static int read_asleep(struct session *s, struct thread *t, int have_cpu, uint64_t cpu, long nr,
		       uint64_t sp, uint64_t pc, session_emit_fn *emit, void *ctx)
{
	struct snapshot *snap = snapshot_new(s, t, SNAP_SYSCALL);

	if (!snap)
		return 0;
	snap->syscall = nr;
	memset(&snap->img.regs, 0, sizeof(snap->img.regs));
	snap->img.regs.r[DWARF_RSP] = sp;
	snap->img.regs.r[DWARF_RIP] = pc;
	snap->img.regs.valid = 1u << DWARF_RSP | 1u << DWARF_RIP;
	stackcopy_image(s, t->tid, sp, pc, snap);
	read_kstack(s, t, snap);
	if (!still_asleep(s, t, have_cpu, cpu, nr, sp, pc)) {
		s->stats.torn_reads++;
		snapshot_free(snap);
		return -1;
	}
	s->stats.blocked_reads++;
	if (have_cpu) {
		t->flags |= THREAD_ASLEEP;
		t->asleep_cpu = cpu;
		t->asleep_nr = nr;
	}
	emit_snapshot(s, t, snap, emit, ctx);
	return 0;
}

/* sample_running's wait for the stop asked of t. */
static int sample_running_wait(struct session *s, struct thread *t, uint64_t deadline,
			       struct pollfd *pfd, session_emit_fn *emit, void *ctx)
{
	uint64_t now;
	int status;
	pid_t r;

	for (;;) {
		/* By tid: the kernel checks one task, where -1 would walk every child. */
		r = waitpid(t->tid, &status, __WALL | WNOHANG);
		if (r == t->tid) {
			batch_stop(s, t, status, emit, ctx);
			return 0;
		}
		if (r < 0 && errno == ECHILD) {
			t->flags &= ~(THREAD_WANTED | THREAD_HELD); /* not ours after all */
			return 0;
		}
		now = clock_mono_ns();
		if (now >= deadline)
			return -1;
		/* Its stop raises a SIGCHLD, which makes the signalfd readable (or another tracer's). */
		poll(pfd, 2, (int)((deadline - now + 999999) / 1000000));
		session_poll(s);
	}
}

/*
 * Stop, copy and release one running thread, waiting at most until
 * deadline for its stop. Returns 0, or -1 when it did not stop in time
 * (it stays held; session_poll() releases it when its stop comes).
 */
static int sample_running(struct session *s, struct thread *t, uint64_t deadline,
			  session_emit_fn *emit, void *ctx)
{
	struct pollfd pfd[2] = { { .fd = s->sigfd, .events = POLLIN },
				 { .fd = s->wakefd, .events = POLLIN } };
	int r;

	if (seize(s, t) < 0)
		return 0;
	chldwake_waiting(s->wakeslot, 1);
	r = sample_running_wait(s, t, deadline, pfd, emit, ctx);
	chldwake_waiting(s->wakeslot, 0);
	return r;
}


/*
 * Running threads are taken one at a time, as the raw ptrace floor does:
 * asking them all to stop at once shortens the tick but makes each wait
 * while the others are copied, and a thread must stand still only while
 * its own registers and stack are copied.
 */
void session_sample(struct session *s, const pid_t *tids, uint32_t n, int running_only,
		    session_emit_fn *emit, void *ctx)
{
	struct snapshot *snap;
	struct thread *t;
	uint64_t sp, pc, cpu = 0, wait_ns, start = clock_mono_ns(), now;
	uint32_t i;
	int st, have_cpu, tries;
	long nr;

	session_poll(s);
	for (i = 0; i < n; i++) {
		if (!(t = threads_get(&s->threads, tids[i])) || (t->flags & THREAD_HELD))
			continue;
		/*
		 * A thread that has not run since it was read asleep is still
		 * where it was: one pread of its CPU clock replaces the copy and
		 * the unwinding, which keeps a wall profile of a thousand idle
		 * threads cheap.
		 */
		have_cpu = !running_only && thread_read_cpu(&s->threads, t, &cpu) == 0;
		if (have_cpu && (t->flags & THREAD_ASLEEP) && cpu == t->asleep_cpu) {
			if ((snap = snapshot_new(s, t, SNAP_REPEAT))) {
				snap->syscall = t->asleep_nr;
				s->stats.repeats++;
				emit_snapshot(s, t, snap, emit, ctx);
			}
			continue;
		}
		t->flags &= ~(THREAD_ASLEEP | THREAD_TORN);
		for (tries = 0;; tries++) {
			st = thread_read_syscall(&s->threads, t, &nr, &sp, &pc);
			if (st < 0 && (errno == EACCES || errno == EPERM))
				s->doubt = 1; /* the kernel may no longer let us look */
			if (st != 0 || running_only ||
			    read_asleep(s, t, have_cpu, cpu, nr, sp, pc, emit, ctx) == 0)
				break;
			if (tries == 2) {
				/*
				 * Woke during three reads in a row, asleep at each
				 * look (a pipe ping-pong read under ASan): stopped
				 * instead, as a running one. The stop breaks its
				 * sleep, restarted as any (copy_stopped).
				 */
				t->flags |= THREAD_TORN;
				s->stats.torn_stops++;
				st = 1;
				break;
			}
			if (have_cpu)
				have_cpu = thread_read_cpu(&s->threads, t, &cpu) == 0;
		}
		if (st == 0 && !running_only)
			continue;
		now = clock_mono_ns();
		wait_ns = s->defer_emit ? SESSION_DEFER_US * 1000ull
					: SESSION_STOP_TIMEOUT_MS * 1000000ull;
		/*
		 * More runnable threads than CPUs: most wait for one, and
		 * waiting for each in turn would make the tick late. Past its
		 * budget a batch only asks; the stops are copied as they come.
		 */
		if (s->defer_emit && s->batch_ns && now - start + wait_ns > s->batch_ns)
			wait_ns = now - start < s->batch_ns ? s->batch_ns - (now - start) : 0;
		if (st != 1 || sample_running(s, t, now + wait_ns, emit, ctx) == 0)
			continue;
		/*
		 * Late: it stays held; session_poll() copies it for defer_emit
		 * (it is waiting for a CPU: the clock must not wait with it) or
		 * releases it when its stop comes. Where every thread is wanted
		 * and nothing is deferred, say it could not be captured rather
		 * than leave it out.
		 */
		t->flags &= ~THREAD_WANTED;
		s->late++;
		if (s->defer_emit) {
			t->flags |= THREAD_DEFERRED;
			continue;
		}
		s->stats.stop_timeouts++;
		if (!running_only && (snap = snapshot_new(s, t, SNAP_LOST)))
			emit_snapshot(s, t, snap, emit, ctx);
	}
}
