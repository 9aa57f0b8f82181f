/*
 * session.c — PTRACE_SEIZE, the stop-copy-resume sequence and the handling
 * of every other stop a tracee can report. The sequence for a running
 * thread is: PTRACE_INTERRUPT, wait for its stop, PTRACE_GETREGS, one
 * process_vm_readv of the stack, PTRACE_CONT; the pause is timed from the
 * interrupt to the resume and nothing else happens inside it (names and
 * states are read afterwards). A sleeping thread is read from
 * /proc/PID/task/TID/syscall and process_vm_readv, and never stopped.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach/session.h"
#include "common/err.h"
#include "common/proc.h"

#define ERESTARTNOHAND 514 /* kernel-internal: restart unless a handler ran */
#define MAX_IOV 256

/* What a wait status says the thread is doing now. */
enum stop_kind {
	STOP_GONE,   /* exited or killed */
	STOP_TRAP,   /* PTRACE_EVENT_STOP: our interrupt or a new thread's first stop */
	STOP_GROUP,  /* group stop (SIGSTOP and friends) */
	STOP_SIGNAL, /* signal-delivery stop */
	STOP_EVENT,  /* clone, exec or another ptrace event */
};

int session_init(struct session *s, pid_t pid, size_t stack_cap)
{
	sigset_t set;

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->stack_cap = stack_cap;
	s->sigfd = -1;
	if (threads_init(&s->threads, pid) < 0)
		return error("out of memory");
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	s->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s->sigfd < 0) {
		threads_release(&s->threads);
		return error_errno("cannot create a signalfd");
	}
	return 0;
}

void session_release(struct session *s)
{
	threads_release(&s->threads);
	if (s->sigfd >= 0)
		close(s->sigfd);
	s->sigfd = -1;
}

static int is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* Update our state from a wait status; does not resume. */
static enum stop_kind session_account(struct session *s, pid_t tid, int status, int *sig)
{
	struct thread *t = threads_get(&s->threads, tid);
	unsigned long msg;
	int event;

	*sig = 0;
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		threads_remove(&s->threads, tid);
		if (s->threads.count == 0)
			s->gone = 1;
		return STOP_GONE;
	}
	if (!WIFSTOPPED(status))
		return STOP_EVENT;
	event = status >> 16;
	*sig = WSTOPSIG(status);
	if (t)
		t->flags &= ~THREAD_NEW;
	switch (event) {
	case PTRACE_EVENT_STOP:
		if (is_stop_signal(*sig)) {
			if (t)
				t->flags |= THREAD_GROUP_STOP;
			return STOP_GROUP;
		}
		if (t)
			t->flags &= ~(THREAD_GROUP_STOP | THREAD_INTR_PENDING);
		return STOP_TRAP;
	case PTRACE_EVENT_CLONE:
		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) == 0) {
			struct thread *n = threads_add(&s->threads, (pid_t)msg);

			if (n && !(n->flags & THREAD_SEIZED)) {
				n->flags |= THREAD_SEIZED | THREAD_NEW;
				n->last_sample_ns = clock_mono_ns();
				s->stats.threads_seen++;
			}
		}
		return STOP_EVENT;
	case PTRACE_EVENT_EXEC:
		s->execed = 1;
		return STOP_EVENT;
	case 0:
		return STOP_SIGNAL;
	default:
		return STOP_EVENT;
	}
}

/* Let a stopped thread go on as if we had never looked. */
static void session_resume(struct session *s, pid_t tid, enum stop_kind k, int sig)
{
	switch (k) {
	case STOP_GONE:
		break;
	case STOP_GROUP:
		/* Stay in the group stop, but keep reporting (SIGCONT). */
		ptrace(PTRACE_LISTEN, tid, 0, 0);
		break;
	case STOP_SIGNAL:
		s->stats.signals_passed++;
		ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
		break;
	case STOP_TRAP:
	case STOP_EVENT:
		ptrace(PTRACE_CONT, tid, 0, 0);
		break;
	}
}

static void session_drain_signals(struct session *s)
{
	struct signalfd_siginfo si;

	while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP)
			s->stop_signal = (int)si.ssi_signo;
		else if (si.ssi_signo == SIGCHLD)
			s->sigchld = 1;
	}
}

/*
 * waitpid(-1) walks every tracee in the kernel (measured: a third of the
 * tracer's CPU with 1000 threads when called on every wake-up), so it runs
 * only after a SIGCHLD: every stop or exit of a tracee raises one, and one
 * read from the signalfd before the sweep guarantees no event is missed —
 * an event after the read raises the next SIGCHLD.
 */
void session_poll(struct session *s)
{
	enum stop_kind k;
	int status, sig;
	pid_t tid;

	session_drain_signals(s);
	if (!s->sigchld)
		return;
	s->sigchld = 0;
	for (;;) {
		tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid <= 0) {
			if (tid < 0 && errno == ECHILD && s->threads.count == 0)
				s->gone = 1;
			break;
		}
		k = session_account(s, tid, status, &sig);
		session_resume(s, tid, k, sig);
	}
}

static int seize_one(struct session *s, pid_t tid)
{
	struct thread *t;

	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC)) < 0)
		return -1;
	t = threads_add(&s->threads, tid);
	if (!t)
		return 0; /* traced but untracked: its stops are still answered */
	t->flags |= THREAD_SEIZED;
	t->last_sample_ns = clock_mono_ns();
	/* CPU used before the capture is not ours to count. */
	if (thread_read_cpu(&s->threads, t, &t->cpu_ns) < 0)
		t->cpu_ns = 0;
	s->stats.threads_seen++;
	return 0;
}

/* One pass over /proc/PID/task; returns how many threads were new, or -1. */
static int session_scan(struct session *s, int *first_errno)
{
	char p[64];
	struct dirent *d;
	DIR *dir;
	int fresh = 0;
	pid_t tid;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)s->pid);
	dir = opendir(p);
	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		tid = (pid_t)atoi(d->d_name);
		if (tid <= 0)
			continue;
		if (threads_get(&s->threads, tid))
			continue;
		if (seize_one(s, tid) < 0) {
			if (errno != ESRCH && !*first_errno)
				*first_errno = errno;
			continue;
		}
		fresh++;
	}
	closedir(dir);
	return fresh;
}

int session_seize(struct session *s)
{
	int pass, r, e = 0;

	for (pass = 0; pass < 100; pass++) {
		r = session_scan(s, &e);
		if (r < 0) {
			if (s->threads.count)
				return 0;
			errno = ESRCH;
			return -1;
		}
		if (s->threads.count == 0 && e) {
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
	}
	if (s->threads.count == 0) {
		errno = ESRCH;
		return -1;
	}
	return 0;
}

int session_rescan(struct session *s)
{
	int e = 0;

	return session_scan(s, &e) < 0 ? -1 : 0;
}

/* Copy the stack from sp up, page by page so a hole ends the copy cleanly. */
static size_t copy_stack(pid_t pid, uint64_t sp, unsigned char *buf, size_t cap)
{
	struct iovec local, remote[MAX_IOV];
	uint64_t a = sp, end = sp + cap, next;
	ssize_t r;
	int n = 0;

	if (end < sp)
		end = UINT64_MAX;
	while (a < end && n < MAX_IOV) {
		next = (a & ~(uint64_t)4095) + 4096;
		if (next > end || next == 0)
			next = end;
		remote[n].iov_base = (void *)(uintptr_t)a;
		remote[n].iov_len = next - a;
		a = next;
		n++;
	}
	local.iov_base = buf;
	local.iov_len = (size_t)(a - sp);
	r = process_vm_readv(pid, &local, 1, remote, (unsigned long)n, 0);
	return r < 0 ? 0 : (size_t)r;
}

static void regs_from_user(struct regs *r, const struct user_regs_struct *u)
{
	r->r[0] = u->rax;
	r->r[1] = u->rdx;
	r->r[2] = u->rcx;
	r->r[3] = u->rbx;
	r->r[4] = u->rsi;
	r->r[5] = u->rdi;
	r->r[6] = u->rbp;
	r->r[7] = u->rsp;
	r->r[8] = u->r8;
	r->r[9] = u->r9;
	r->r[10] = u->r10;
	r->r[11] = u->r11;
	r->r[12] = u->r12;
	r->r[13] = u->r13;
	r->r[14] = u->r14;
	r->r[15] = u->r15;
	r->r[16] = u->rip;
	r->valid = (1u << DWARF_NREGS) - 1;
}

static void pause_record(struct session *s, uint64_t ns)
{
	uint64_t b = ns / 1000;

	s->stats.stops++;
	s->stats.pause_ns_sum += ns;
	if (ns > s->stats.pause_ns_max)
		s->stats.pause_ns_max = ns;
	s->stats.pause_hist[b < SESSION_PAUSE_BUCKETS ? b : SESSION_PAUSE_BUCKETS]++;
}

uint64_t session_pause_percentile(const struct session *s, double pct)
{
	uint64_t want, seen = 0;
	size_t i;

	if (!s->stats.stops)
		return 0;
	want = (uint64_t)(pct / 100.0 * (double)s->stats.stops);
	if (want >= s->stats.stops)
		want = s->stats.stops - 1;
	for (i = 0; i <= SESSION_PAUSE_BUCKETS; i++) {
		seen += s->stats.pause_hist[i];
		if (seen > want)
			return i < SESSION_PAUSE_BUCKETS ? i * 1000 + 500 : s->stats.pause_ns_max;
	}
	return s->stats.pause_ns_max;
}

static struct snapshot *snapshot_new(struct session *s, struct thread *t, int how)
{
	struct snapshot *snap = calloc(1, sizeof(*snap));

	if (!snap)
		return NULL;
	snap->stack = how == SNAP_REPEAT || how == SNAP_LOST ? NULL : malloc(s->stack_cap);
	if (!snap->stack && how != SNAP_REPEAT && how != SNAP_LOST) {
		free(snap);
		return NULL;
	}
	snap->img.stack = snap->stack;
	snap->tid = t->tid;
	snap->how = how;
	snap->syscall = -1;
	snap->state = '?';
	return snap;
}

static size_t copy_size(struct session *s, pid_t tid)
{
	size_t n = s->hints ? hints_get(s->hints, tid) : s->stack_cap;

	return n < s->stack_cap ? n : s->stack_cap;
}

/* Copy a thread that is in a ptrace stop of kind k. 0 or -1. */
static int copy_stopped(struct session *s, struct thread *t, enum stop_kind k,
			struct snapshot *snap)
{
	struct user_regs_struct ur;

	if (ptrace(PTRACE_GETREGS, t->tid, 0, &ur) < 0)
		return -1;
	if (k == STOP_TRAP && (long)ur.orig_rax >= 0 && (long)ur.rax == -EINTR) {
		/* Our stop broke a syscall that cannot restart: make it restart. */
		ur.rax = (unsigned long long)-ERESTARTNOHAND;
		if (ptrace(PTRACE_SETREGS, t->tid, 0, &ur) == 0)
			s->stats.eintr_fixed++;
		ur.rax = (unsigned long long)-EINTR;
	}
	regs_from_user(&snap->img.regs, &ur);
	snap->img.stack_addr = ur.rsp;
	snap->img.stack_len = copy_stack(s->pid, ur.rsp, snap->stack, copy_size(s, t->tid));
	return 0;
}

/* Read a sleeping thread without stopping it. */
static void copy_blocked(struct session *s, struct snapshot *snap, uint64_t sp, uint64_t pc)
{
	memset(&snap->img.regs, 0, sizeof(snap->img.regs));
	snap->img.regs.r[DWARF_RSP] = sp;
	snap->img.regs.r[DWARF_RIP] = pc;
	snap->img.regs.valid = 1u << DWARF_RSP | 1u << DWARF_RIP;
	snap->img.stack_addr = sp;
	snap->img.stack_len = copy_stack(s->pid, sp, snap->stack, copy_size(s, snap->tid));
	s->stats.blocked_reads++;
}

static void emit_snapshot(struct session *s, struct thread *t, struct snapshot *snap,
			  session_emit_fn *emit, void *ctx)
{
	snap->time_ns = clock_mono_ns();
	if (snap->how == SNAP_STOPPED || snap->how == SNAP_LOST)
		snap->state = 'R';
	else if (snap->how == SNAP_REPEAT)
		snap->state = t->asleep_state;
	else if (s->want_state)
		snap->state = thread_read_state(&s->threads, t);
	if (snap->how == SNAP_SYSCALL)
		t->asleep_state = snap->state;
	thread_read_name(&s->threads, t);
	memcpy(snap->name, t->name, sizeof(snap->name));
	emit(ctx, t, snap);
}

/* Ask t to stop; 0, or -1 when it is gone. */
static int interrupt(struct thread *t)
{
	if (!(t->flags & THREAD_INTR_PENDING)) {
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0)
			return -1;
		t->flags |= THREAD_INTR_PENDING;
	}
	t->intr_ns = clock_mono_ns();
	t->flags |= THREAD_WANTED;
	return 0;
}

/* Handle one wait status during a batch; returns 1 when it was a wanted thread. */
static int batch_status(struct session *s, pid_t tid, int status, session_emit_fn *emit,
			void *ctx)
{
	struct thread *t = threads_get(&s->threads, tid);
	struct snapshot *snap = NULL;
	int wanted = t && (t->flags & THREAD_WANTED), sig;
	enum stop_kind k;

	if (wanted)
		t->flags &= ~THREAD_WANTED;
	k = session_account(s, tid, status, &sig);
	if (k == STOP_GONE)
		return wanted;
	/* Any stop will do for a copy: the registers are the user's. */
	if (wanted && (snap = snapshot_new(s, t, SNAP_STOPPED)) &&
	    copy_stopped(s, t, k, snap) < 0) {
		snapshot_free(snap);
		snap = NULL;
	}
	session_resume(s, tid, k, sig);
	if (wanted)
		pause_record(s, clock_mono_ns() - t->intr_ns);
	if (snap)
		emit_snapshot(s, t, snap, emit, ctx);
	return wanted;
}

void session_sample(struct session *s, const pid_t *tids, uint32_t n, int running_only,
		    session_emit_fn *emit, void *ctx)
{
	struct pollfd pfd = { .fd = s->sigfd, .events = POLLIN };
	struct snapshot *snap;
	struct thread *t;
	uint64_t sp, pc, deadline, now, cpu = 0;
	uint32_t i, waiting = 0;
	int st, status, have_cpu;
	long nr;
	pid_t tid;

	/* Answer pending stops first: a thread may be waiting on us. */
	session_poll(s);
	for (i = 0; i < n; i++) {
		t = threads_get(&s->threads, tids[i]);
		if (!t)
			continue;
		/*
		 * A thread that has not run since it was read asleep is still
		 * where it was: one pread of its CPU clock replaces the copy
		 * and the unwinding, which is what keeps a wall profile of a
		 * thousand idle threads cheap.
		 */
		have_cpu = !running_only && thread_read_cpu(&s->threads, t, &cpu) == 0;
		if (have_cpu && (t->flags & THREAD_ASLEEP) && cpu == t->asleep_cpu) {
			snap = snapshot_new(s, t, SNAP_REPEAT);
			if (!snap)
				continue;
			snap->syscall = t->asleep_nr;
			s->stats.repeats++;
			emit_snapshot(s, t, snap, emit, ctx);
			continue;
		}
		t->flags &= ~THREAD_ASLEEP;
		st = thread_read_syscall(&s->threads, t, &nr, &sp, &pc);
		if (st == 1 && !(t->flags & THREAD_GROUP_STOP)) {
			if (interrupt(t) == 0)
				waiting++;
		} else if (st == 0 && !running_only) {
			snap = snapshot_new(s, t, SNAP_SYSCALL);
			if (!snap)
				continue;
			snap->syscall = nr;
			copy_blocked(s, snap, sp, pc);
			if (have_cpu) {
				t->flags |= THREAD_ASLEEP;
				t->asleep_cpu = cpu;
				t->asleep_nr = nr;
			}
			emit_snapshot(s, t, snap, emit, ctx);
		}
	}
	/*
	 * Wait for the wanted threads by tid (the kernel checks one task for a
	 * specific pid, all of them for -1); stops of other threads meanwhile
	 * are answered by the sweep after the batch.
	 */
	deadline = clock_mono_ns() + SESSION_STOP_TIMEOUT_MS * 1000000ull;
	while (waiting) {
		for (i = 0; i < n && waiting; i++) {
			t = threads_get(&s->threads, tids[i]);
			if (!t || !(t->flags & THREAD_WANTED))
				continue;
			tid = waitpid(tids[i], &status, __WALL | WNOHANG);
			if (tid == tids[i])
				waiting -= (uint32_t)batch_status(s, tid, status, emit, ctx);
			else if (tid < 0 && errno == ECHILD) {
				t->flags &= ~THREAD_WANTED; /* no longer ours */
				waiting--;
			}
		}
		now = clock_mono_ns();
		if (!waiting || now >= deadline)
			break;
		poll(&pfd, 1, (int)((deadline - now + 999999) / 1000000));
		session_drain_signals(s);
	}
	session_poll(s);
	if (waiting) {
		/*
		 * Late ones: their stops are answered, not copied, when they
		 * come. Where every thread is wanted, say which could not be
		 * captured rather than leave them out.
		 */
		for (i = 0; i < n; i++) {
			t = threads_get(&s->threads, tids[i]);
			if (!t || !(t->flags & THREAD_WANTED))
				continue;
			t->flags &= ~THREAD_WANTED;
			s->stats.stop_timeouts++;
			if (!running_only && (snap = snapshot_new(s, t, SNAP_LOST)))
				emit_snapshot(s, t, snap, emit, ctx);
		}
	}
}
