/*
 * remcall.c — the remote call (remcall.h). Invariant: the frame written on
 * the target's stack is, byte for byte where rt_sigreturn reads it, what
 * the kernel writes for a handler (arch/x86/kernel/signal_64.c), so that
 * the thread's way back never depends on cprof-attach being alive; the
 * thread's registers point into the call only while that frame is whole.
 *
 * rt_sigframe, from its start: pretcode (8), ucontext { uc_flags,
 * uc_link, uc_stack (24), sigcontext (256), uc_sigmask (8) }, siginfo
 * (128); the xstate it points to lies above it, 64-byte aligned. The
 * frame's address is 8 modulo 16, as at any function's entry.
 */
#include <elf.h>
#include <stdarg.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/ptrace.h>

#include "attach/inject/remcall.h"
#include "common/proc.h"
#include "common/watchdog.h"

#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

#define FRAME_LEN 440            /* pretcode + ucontext + siginfo */
#define XSTATE_CAP (64u << 10)   /* more than any xstate the kernel gives (AMX included) */
#define FXSAVE_LEN 512
#define SW_OFF 464               /* fx_sw_bytes inside the fxsave area */
#define XS_MAGIC1 0x46505853u
#define XS_MAGIC2 0x46505845u
#define UC_FP_XSTATE 1ull
#define UC_SIGCONTEXT_SS 2ull
#define UC_STRICT_RESTORE_SS 4ull
/*
 * uc_stack: rt_sigreturn hands it to sigaltstack(), ignoring the result.
 * A mode that is none of 0, SS_ONSTACK, SS_DISABLE is refused there with
 * EINVAL before anything changes, so the thread's alternate stack (which
 * cannot be read from outside) stays as it is.
 */
#define SS_FLAGS_INVALID 3ull
#define RESTORE_RT_LEN 9         /* mov $15,%rax (7 bytes); syscall (2) */
#define NR_RT_SIGRETURN 15
#define NR_RESTART_SYSCALL 219

static const unsigned char restore_rt_code[RESTORE_RT_LEN] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00,
							      0x00, 0x0f, 0x05 };

/* Everything saved of the thread before the call. */
struct saved {
	struct user_regs_struct regs;
	struct user_fpregs_struct fp; /* when the xstate regset is refused */
	unsigned char *xs;
	size_t xs_len;                /* 0: only fp */
	uint64_t mask;
};

static void why_set(struct remcall_res *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_set(struct remcall_res *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->why, sizeof(res->why), fmt, ap);
	va_end(ap);
}

int remcall_find_restorer(pid_t pid, uint64_t *addr, const char **why)
{
	char path[64], line[4352];
	unsigned char *buf = NULL;
	FILE *f;
	int rc = -1;

	*why = "no executable mapping of the C library holds __restore_rt";
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "re"))) {
		*why = "its maps cannot be read";
		return -1;
	}
	while (rc < 0 && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8], *name = strchr(line, '/');
		size_t len, got, i;

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[2] != 'x' || !name)
			continue;
		name[strcspn(name, "\n")] = 0;
		if (!strstr(strrchr(name, '/'), "libc.so") && !strstr(strrchr(name, '/'), "libc-"))
			continue;
		len = hi - lo;
		if (len > (64u << 20) || !(buf = malloc(len)))
			break;
		got = 0;
		{
			struct iovec l = { buf, len }, r = { (void *)lo, len };
			ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);

			got = n > 0 ? (size_t)n : 0;
		}
		/* __restore_rt is the only "mov $15,%rax; syscall" in glibc. */
		for (i = 0; i + RESTORE_RT_LEN <= got; i++) {
			if (buf[i] == 0x48 && !memcmp(buf + i, restore_rt_code, RESTORE_RT_LEN)) {
				*addr = lo + i;
				rc = 0;
				break;
			}
		}
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return rc;
}

/*
 * The registers as the kernel leaves them for a thread that was stopped
 * inside system call orig_rax with result rax and goes back to user code:
 * a call to be restarted points at its syscall instruction again. With
 * restart_block, the restart goes through restart_syscall (the normal
 * path: the kernel's restart_block is intact since no sigreturn ran);
 * without, it re-issues the original call (the frame: rt_sigreturn resets
 * restart_block, so a relative timeout restarts in full, only when
 * cprof-attach died). An EINTR at our interrupt is ours: it restarts.
 */
static void restart_fix(struct user_regs_struct *r, int restart_block)
{
	long ret = (long)r->rax;

	if ((long)r->orig_rax < 0)
		return;
	switch (-ret) {
	case EINTR:
	case ERESTARTSYS:
	case ERESTARTNOINTR:
	case ERESTARTNOHAND:
		r->rax = r->orig_rax;
		r->rip -= 2;
		break;
	case ERESTART_RESTARTBLOCK:
		r->rax = restart_block ? NR_RESTART_SYSCALL : r->orig_rax;
		r->rip -= 2;
		break;
	default:
		break;
	}
}

static uint64_t now_ns(void)
{
	return clock_mono_ns();
}

/*
 * Wait for a stop or the end of tid until deadline (monotonic ns): 1 and
 * *status, 0 at the deadline. SIGCHLD is blocked in this thread during
 * the call (remcall_call()) so that sigtimedwait wakes at the stop; it may
 * still go to another thread, so the wait also polls waitpid at most every
 * millisecond.
 */
static int wait_stop(pid_t tid, int *status, uint64_t deadline, struct remcall_res *res)
{
	sigset_t set;
	uint64_t backoff = 20000;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		uint64_t now;
		struct timespec ts;

		if (r == tid)
			return 1;
		if (r < 0 && errno != EINTR) {
			*status = 0; /* ECHILD: not ours any more (gone) */
			return -1;
		}
		if (watchdog_stop_signal() && !res->stop_signal)
			res->stop_signal = watchdog_stop_signal();
		now = now_ns();
		if (now >= deadline)
			return 0;
		/* Short sleeps first: a stop usually comes within microseconds. */
		if (backoff > deadline - now)
			backoff = deadline - now;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)backoff;
		(void)sigtimedwait(&set, NULL, &ts);
		if (backoff < 1000000)
			backoff *= 2;
	}
}

/* The thread's state: registers, xstate (or FP registers), mask. 0 or -1. */
static int save_thread(pid_t tid, struct saved *sv)
{
	struct iovec io;

	if (ptrace(PTRACE_GETREGS, tid, 0, &sv->regs) < 0)
		return -1;
	io.iov_base = sv->xs;
	io.iov_len = XSTATE_CAP;
	sv->xs_len = 0;
	if (sv->xs && ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &io) == 0 &&
	    io.iov_len >= FXSAVE_LEN + 64)
		sv->xs_len = io.iov_len;
	else if (ptrace(PTRACE_GETFPREGS, tid, 0, &sv->fp) < 0)
		return -1;
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(sv->mask), &sv->mask) < 0)
		return -1;
	return 0;
}

/* Mask and xstate put back, then the registers (the order remcall.h gives). 0 or -1. */
static int restore_thread(pid_t tid, const struct saved *sv, const struct user_regs_struct *regs)
{
	struct iovec io = { sv->xs, sv->xs_len };

	if (ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(sv->mask), &sv->mask) < 0)
		return -1;
	if (sv->xs_len ? ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &io) < 0
		       : ptrace(PTRACE_SETFPREGS, tid, 0, &sv->fp) < 0)
		return -1;
	return ptrace(PTRACE_SETREGS, tid, 0, regs) < 0 ? -1 : 0;
}

static void put64(unsigned char *p, unsigned word, uint64_t v)
{
	memcpy(p + 8 * word, &v, 8);
}

/*
 * The bytes from the frame up to the red zone, in buf (zeroed, cap bytes
 * at least), for a thread saved in sv; *frame and *blob_at their target
 * addresses. The length, or 0 when it does not fit.
 */
static size_t frame_build(const struct saved *sv, const struct remcall_req *req, unsigned char *buf,
			  size_t cap, uint64_t *frame, uint64_t *blob_at)
{
	struct user_regs_struct r = sv->regs;
	uint64_t top = sv->regs.rsp - REMCALL_REDZONE, sp = top, fpa, fr, xsize;
	size_t fplen, len;
	unsigned char *p, *fp;

	if (req->blob_len) {
		sp = (sp - req->blob_len) & ~15ull;
		*blob_at = sp;
	}
	xsize = 0;
	if (sv->xs_len) {
		uint32_t magic, xs_size;

		memcpy(&magic, sv->xs + SW_OFF, 4);
		memcpy(&xs_size, sv->xs + SW_OFF + 12, 4);
		if (magic == XS_MAGIC1 && xs_size >= FXSAVE_LEN + 64 && xs_size <= sv->xs_len)
			xsize = xs_size;
	}
	fplen = xsize ? xsize + 4 : FXSAVE_LEN;
	fpa = (sp - fplen) & ~63ull;
	fr = ((fpa - FRAME_LEN) & ~15ull) - 8;
	len = (size_t)(top - fr);
	if (len > cap)
		return 0;
	memset(buf, 0, len);
	p = buf;
	fp = buf + (fpa - fr);
	if (xsize) {
		uint32_t m2 = XS_MAGIC2;

		memcpy(fp, sv->xs, xsize);
		memcpy(fp + xsize, &m2, 4);
	} else {
		/* The legacy area alone: the kernel restores FP and SSE from it. */
		memcpy(fp, sv->xs_len ? (const void *)sv->xs : (const void *)&sv->fp, FXSAVE_LEN);
		memset(fp + SW_OFF, 0, FXSAVE_LEN - SW_OFF);
	}
	if (req->blob_len)
		memcpy(buf + (*blob_at - fr), req->blob, req->blob_len);
	restart_fix(&r, 0);
	put64(p, 0, req->restorer);
	put64(p, 1, (xsize ? UC_FP_XSTATE : 0) | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS);
	put64(p, 2, 0);
	put64(p, 3, 0);
	put64(p, 4, SS_FLAGS_INVALID);
	put64(p, 5, 0);
	put64(p, 6, r.r8);
	put64(p, 7, r.r9);
	put64(p, 8, r.r10);
	put64(p, 9, r.r11);
	put64(p, 10, r.r12);
	put64(p, 11, r.r13);
	put64(p, 12, r.r14);
	put64(p, 13, r.r15);
	put64(p, 14, r.rdi);
	put64(p, 15, r.rsi);
	put64(p, 16, r.rbp);
	put64(p, 17, r.rbx);
	put64(p, 18, r.rdx);
	put64(p, 19, r.rax);
	put64(p, 20, r.rcx);
	put64(p, 21, r.rsp);
	put64(p, 22, r.rip);
	put64(p, 23, r.eflags);
	put64(p, 24, (r.cs & 0xffff) | ((uint64_t)(r.ss & 0xffff) << 48));
	put64(p, 27, sv->mask);
	put64(p, 29, fpa);
	put64(p, 38, sv->mask);
	*frame = fr;
	return len;
}

/*
 * Release tid after a deadline: interrupt it, wait a little for the stop,
 * detach (passing on a signal it stopped for). It finishes the call alone.
 */
static void abandon(pid_t tid)
{
	int status = 0;
	uint64_t end;

	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
		return;
	end = now_ns() + 200000000ull;
	while (now_ns() < end) {
		if (waitpid(tid, &status, __WALL | WNOHANG) == tid) {
			int sig = (WIFSTOPPED(status) && (status >> 16) == 0) ? WSTOPSIG(status) : 0;

			if (sig == (SIGTRAP | 0x80))
				sig = 0;
			ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
			return;
		}
		usleep(1000);
	}
	/* Still not stopped: our exit detaches it. */
}

/* Whether the stop is the entry of the frame's rt_sigreturn. */
static int at_sigreturn(pid_t tid, uint64_t restorer, uint64_t frame)
{
	struct ptrace_syscall_info si;
	struct user_regs_struct r;

	if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(si), &si) > 0) {
		if (si.op != PTRACE_SYSCALL_INFO_ENTRY)
			return 0;
		return si.entry.nr == NR_RT_SIGRETURN && si.instruction_pointer == restorer + RESTORE_RT_LEN &&
		       si.stack_pointer == frame + 8;
	}
	/* Before Linux 5.3: entry and exit tell apart by rax (-ENOSYS at an entry). */
	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return 0;
	return r.orig_rax == NR_RT_SIGRETURN && (long)r.rax == -ENOSYS &&
	       r.rip == restorer + RESTORE_RT_LEN && r.rsp == frame + 8;
}

int remcall_call(pid_t pid, pid_t tid, const struct remcall_req *req, struct remcall_res *res)
{
	struct saved sv;
	sigset_t chld, old_mask;
	struct user_regs_struct call, back;
	unsigned char *buf = NULL;
	uint64_t t0, deadline, frame = 0, blob_at = 0;
	size_t len;
	int status, rc = REMCALL_UNTOUCHED, i, seized = 0, tries;

	memset(res, 0, sizeof(*res));
	memset(&sv, 0, sizeof(sv));
	if (req->blob_len > REMCALL_BLOB_MAX || !req->restorer || !req->fn) {
		why_set(res, "bad remote call request");
		return REMCALL_UNTOUCHED;
	}
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old_mask);
	t0 = now_ns();
	sv.xs = malloc(XSTATE_CAP);
	buf = malloc(XSTATE_CAP + REMCALL_BLOB_MAX + 4096);
	if (!sv.xs || !buf) {
		why_set(res, "out of memory");
		goto out;
	}
	deadline = now_ns() + (req->deadline_ms ? req->deadline_ms : REMCALL_DEADLINE_MS) * 1000000ull;
	/* No PTRACE_O_EXITKILL: our death must leave the thread alive and going. */
	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)PTRACE_O_TRACESYSGOOD) < 0) {
		why_set(res, "thread %d cannot be seized: %s", (int)tid, strerror(errno));
		rc = errno == ESRCH ? REMCALL_GONE : REMCALL_UNTOUCHED;
		goto out;
	}
	seized = 1;
	for (tries = 0;; tries++) {
		t0 = now_ns();
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
			why_set(res, "thread %d cannot be interrupted: %s", (int)tid, strerror(errno));
			goto out;
		}
		i = wait_stop(tid, &status, deadline, res);
		if (i <= 0) {
			why_set(res, "thread %d did not stop in time", (int)tid);
			rc = i < 0 ? REMCALL_GONE : REMCALL_UNTOUCHED;
			goto out;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			seized = 0;
			why_set(res, "thread %d exited", (int)tid);
			rc = REMCALL_GONE;
			goto out;
		}
		if ((status >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(status) == SIGTRAP)
			break;
		if ((status >> 16) == PTRACE_EVENT_STOP) {
			why_set(res, "the process is stopped (job control): not called");
			goto out;
		}
		/* A signal was about to be delivered: let it go, try again. */
		res->signals++;
		ptrace(PTRACE_DETACH, tid, 0, (void *)(long)WSTOPSIG(status));
		seized = 0;
		if (tries >= 5) {
			why_set(res, "thread %d kept receiving signals", (int)tid);
			goto out;
		}
		if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)PTRACE_O_TRACESYSGOOD) < 0) {
			why_set(res, "thread %d cannot be seized: %s", (int)tid, strerror(errno));
			goto out;
		}
		seized = 1;
	}
	if (save_thread(tid, &sv) < 0) {
		why_set(res, "thread %d's registers cannot be read: %s", (int)tid, strerror(errno));
		goto out;
	}
	if (req->vet && req->vet(req->vet_ctx, pid, tid, &sv.regs, res->why, sizeof(res->why)) < 0) {
		rc = REMCALL_VETOED;
		goto out;
	}
	len = frame_build(&sv, req, buf, XSTATE_CAP + REMCALL_BLOB_MAX + 4096, &frame, &blob_at);
	if (!len) {
		why_set(res, "thread %d: the frame does not fit", (int)tid);
		goto out;
	}
	{
		struct iovec l = { buf, len }, r = { (void *)frame, len };

		if (process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)len) {
			why_set(res, "thread %d's stack cannot be written at %#llx: %s", (int)tid,
				(unsigned long long)frame, strerror(errno));
			goto out;
		}
	}
	call = sv.regs;
	call.rsp = frame;
	call.rip = req->fn;
	call.rdi = req->args[0];
	call.rsi = req->args[1];
	call.rdx = req->args[2];
	call.rcx = req->args[3];
	call.r8 = req->args[4];
	call.r9 = req->args[5];
	if (req->blob_len && req->blob_arg >= 0 && req->blob_arg < 6) {
		unsigned long long *a[6] = { &call.rdi, &call.rsi, &call.rdx, &call.rcx, &call.r8, &call.r9 };

		*a[req->blob_arg] = blob_at;
	}
	call.rax = 0;
	call.orig_rax = (unsigned long long)-1; /* no restart when it resumes */
	call.eflags &= ~(0x400ull | 0x100ull | 0x10000ull); /* DF, TF, RF: as for a handler */
	if (ptrace(PTRACE_SETREGS, tid, 0, &call) < 0) {
		why_set(res, "thread %d's registers cannot be set: %s", (int)tid, strerror(errno));
		goto out;
	}
	{
		uint64_t all = ~0ull;

		/* Best effort: a failure only lets signals reach handlers during the call. */
		(void)ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(all), &all);
	}
	back = sv.regs;
	restart_fix(&back, 1);
	back.orig_rax = (unsigned long long)-1;
	status = 0;
	for (;;) {
		int sig = 0;

		/* Pass on a signal the mask cannot hold (a fault, SIGSTOP), as without us. */
		if (WIFSTOPPED(status) && (status >> 16) == 0 && WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			sig = WSTOPSIG(status);
			res->signals++;
		}
		if (ptrace(PTRACE_SYSCALL, tid, 0, (void *)(long)sig) < 0 && errno == ESRCH &&
		    kill(tid, 0) < 0 && errno == ESRCH) {
			seized = 0;
			why_set(res, "thread %d went away during the call", (int)tid);
			rc = REMCALL_GONE;
			goto out;
		}
		do
			i = wait_stop(tid, &status, deadline, res);
		while (i > 0 && !WIFSTOPPED(status) && !WIFEXITED(status) && !WIFSIGNALED(status));
		if (i == 0) {
			abandon(tid);
			seized = 0;
			why_set(res, "the call on thread %d did not return within its deadline; it finishes "
				     "by itself", (int)tid);
			rc = REMCALL_TIMEOUT;
			goto out;
		}
		if (i < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
			seized = 0;
			why_set(res, "thread %d ended during the call", (int)tid);
			rc = REMCALL_GONE;
			goto out;
		}
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			res->syscalls++;
			if (at_sigreturn(tid, req->restorer, frame))
				break;
		}
	}
	if (restore_thread(tid, &sv, &back) < 0) {
		/* Let the sigreturn run: it restores all from the frame. */
		why_set(res, "thread %d's state cannot be set back (%s); rt_sigreturn restored it",
			(int)tid, strerror(errno));
		ptrace(PTRACE_DETACH, tid, 0, 0);
		seized = 0;
		rc = REMCALL_OK;
		res->stop_ns = now_ns() - t0;
		goto out;
	}
	ptrace(PTRACE_DETACH, tid, 0, 0);
	seized = 0;
	res->stop_ns = now_ns() - t0;
	rc = REMCALL_OK;
out:
	if (seized) {
		/* Not changed, or a failure after: detach as it is (the frame brings it back). */
		ptrace(PTRACE_DETACH, tid, 0, 0);
		if (!res->stop_ns)
			res->stop_ns = now_ns() - t0;
	}
	if (!res->stop_signal)
		res->stop_signal = watchdog_stop_signal();
	free(buf);
	free(sv.xs);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	return rc;
}
