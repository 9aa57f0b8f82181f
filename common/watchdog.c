/*
 * watchdog.c — a thread that takes the stop signals with sigtimedwait(),
 * publishes the first one (a flag, an eventfd the waiting loops poll),
 * and ends the process when the main thread has not finished in time
 * after it, or when a read of a target's memory has not returned in time.
 * It wakes a few times a second to look; nothing else runs on it, so it
 * can never be the one that is stuck.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/err.h"
#include "common/exitcode.h"
#include "common/proc.h"
#include "common/watchdog.h"

#define WATCHDOG_TICK_NS 100000000ull
#define WATCHDOG_NICE -10 /* where allowed: on a crowded machine the end must not wait for a CPU */
#define WATCHDOG_STUCK_MS 250 /* a read this old when a stop is asked will not return */
#define WATCHDOG_SLOTS 64 /* reads watched at once: tracers of --children, the consumer */

struct read_slot {
	uint64_t since; /* monotonic ns the read began; 0: free */
	uint64_t addr;
	int pid;
};

static int wd_on;
static int wd_fd = -1;
static int wd_sig;
static uint64_t wd_stop_ns;
static const char *wd_phase = "starting";
static int wd_code = EXIT_INTERRUPTED;
static int wd_grace_ms = WATCHDOG_GRACE_MS;
static int wd_taken; /* watchdog_take_stop(): the stop is the caller's own to act on */
static int wd_grace_floor_ms; /* watchdog_grace_floor(): no phase's grace is shorter */
static uint64_t wd_progress_ns; /* the clock at the last watchdog_progress() after a stop */
static struct read_slot wd_reads[WATCHDOG_SLOTS];
static uint64_t wd_due_ns;   /* watchdog_due() */
static unsigned wd_due_number;
static int wd_due_told;
static void (*wd_on_end)(void); /* watchdog_on_end() */

static const char *signame(int sig)
{
	return sig == SIGINT ? "SIGINT" :
	       sig == SIGTERM ? "SIGTERM" :
	       sig == SIGHUP ? "SIGHUP" : "a signal";
}

/*
 * Raise every thread of ours to WATCHDOG_NICE (where allowed): a process
 * ends only when each of its threads has run to take its SIGKILL, and
 * the consumer runs at nice 10 during a capture. No allocation (another
 * thread may hold the allocator's lock): getdents64 into the stack.
 */
static void wd_hasten(void)
{
	char buf[4096];
	long n, off;
	int fd;

	fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			long tid = strtol(d->d_name, NULL, 10);

			if (tid > 0)
				setpriority(PRIO_PROCESS, (id_t)tid, WATCHDOG_NICE);
			off += d->d_reclen;
		}
	}
	close(fd);
}

/* End the process: one line, then _exit (no atexit handler, no flush of a stuck thread's stdio). */
static void __attribute__((noreturn)) wd_end(const char *why)
{
	const char *phase = __atomic_load_n(&wd_phase, __ATOMIC_ACQUIRE);
	int code = __atomic_load_n(&wd_code, __ATOMIC_ACQUIRE);
	char line[512];
	int n;

	wd_hasten();
	if (__atomic_load_n(&wd_on_end, __ATOMIC_ACQUIRE))
		wd_on_end();
	n = snprintf(line, sizeof(line), "cprof-attach: %s while %s: exiting (exit %d)%s\n", why, phase,
		     code,
		     code == EXIT_INTERRUPTED ? "; this capture's profile is not written" : "");
	if (n > 0)
		(void)!write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	_exit(code);
}

/*
 * A read of target memory WATCHDOG_READ_MS old ends the process; once a
 * stop is asked, one WATCHDOG_STUCK_MS old does: its thread can do
 * nothing else until the process ends, so the grace would only be waited.
 */
static void wd_check_reads(uint64_t now)
{
	uint64_t since, limit = (wd_sig ? WATCHDOG_STUCK_MS : WATCHDOG_READ_MS) * 1000000ull;
	char why[256];
	int i;

	for (i = 0; i < WATCHDOG_SLOTS; i++) {
		since = __atomic_load_n(&wd_reads[i].since, __ATOMIC_ACQUIRE);
		if (!since || now < since || now - since < limit)
			continue;
		snprintf(why, sizeof(why),
			 "%s%sa read of %d's memory at 0x%llx has not returned in %.1f s (memory "
			 "the target registered with userfaultfd, or a file on a FUSE mount that "
			 "does not answer)",
			 wd_sig ? signame(wd_sig) : "", wd_sig ? ", and " : "",
			 __atomic_load_n(&wd_reads[i].pid, __ATOMIC_RELAXED),
			 (unsigned long long)__atomic_load_n(&wd_reads[i].addr, __ATOMIC_RELAXED),
			 (double)(now - since) / 1e9);
		wd_end(why);
	}
}

static void wd_check_due(uint64_t now)
{
	uint64_t due = __atomic_load_n(&wd_due_ns, __ATOMIC_ACQUIRE);
	char line[256];
	int n;

	if (!due || now <= due || __atomic_exchange_n(&wd_due_told, 1, __ATOMIC_ACQ_REL))
		return;
	n = snprintf(line, sizeof(line),
		     "cprof-attach: warning: capture %u is still %s, past the time it was due: the "
		     "series is behind\n",
		     __atomic_load_n(&wd_due_number, __ATOMIC_RELAXED),
		     __atomic_load_n(&wd_phase, __ATOMIC_ACQUIRE));
	if (n > 0)
		(void)!write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void *wd_main(void *arg)
{
	struct timespec ts;
	siginfo_t si;
	sigset_t set;
	uint64_t now, wait, end;
	uint64_t one = 1;
	char why[128];
	int sig, grace;

	(void)arg;
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), WATCHDOG_NICE);
	proc_stop_signals(&set, 0);
	for (;;) {
		wait = WATCHDOG_TICK_NS;
		grace = __atomic_load_n(&wd_grace_ms, __ATOMIC_ACQUIRE);
		end = wd_stop_ns + (uint64_t)grace * 1000000ull;
		if (wd_sig) {
			now = clock_mono_ns();
			if (end <= now)
				wait = 1;
			else if (end - now < wait)
				wait = end - now;
		}
		ts.tv_sec = 0;
		ts.tv_nsec = (long)wait;
		sig = sigtimedwait(&set, &si, &ts);
		now = clock_mono_ns();
		if (sig > 0) {
			if (!wd_sig) {
				wd_stop_ns = now;
				__atomic_store_n(&wd_sig, sig, __ATOMIC_RELEASE);
				(void)!write(wd_fd, &one, sizeof(one));
				wd_hasten(); /* what is left to do, sooner */
			} else {
				snprintf(why, sizeof(why), "a second stop signal (%s)", signame(sig));
				wd_end(why);
			}
		}
		grace = __atomic_load_n(&wd_grace_ms, __ATOMIC_ACQUIRE);
		if (wd_sig && now - wd_stop_ns >= (uint64_t)grace * 1000000ull &&
		    (now - __atomic_load_n(&wd_progress_ns, __ATOMIC_RELAXED) >=
			     WATCHDOG_STALL_MS * 1000000ull ||
		     now - wd_stop_ns >= WATCHDOG_GRACE_MAX_MS * 1000000ull)) {
			snprintf(why, sizeof(why), "%s, and still running %.1f s later", signame(wd_sig),
				 (double)(now - wd_stop_ns) / 1e9);
			wd_end(why);
		}
		wd_check_reads(now);
		wd_check_due(now);
	}
	return NULL;
}

int watchdog_start(void)
{
	pthread_attr_t a;
	pthread_t th;
	sigset_t set;
	int r;

	/*
	 * SIGCHLD too, in every thread from here on: a tracee's stop raises
	 * one for the whole process, and a thread that did not block it took
	 * it (ignored) before the tracer's signalfd saw it, so the tracer
	 * waited out its poll: every ptrace pause was 1 ms longer.
	 */
	proc_stop_signals(&set, 1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	wd_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wd_fd < 0)
		return error_errno("cannot create an eventfd for the stop signals");
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 << 10);
	r = pthread_create(&th, &a, wd_main, NULL);
	pthread_attr_destroy(&a);
	if (r) {
		close(wd_fd);
		wd_fd = -1;
		errno = r;
		return error_errno("cannot start the watchdog thread");
	}
	__atomic_store_n(&wd_on, 1, __ATOMIC_RELEASE);
	return 0;
}

int watchdog_running(void)
{
	return __atomic_load_n(&wd_on, __ATOMIC_ACQUIRE);
}

int watchdog_fd(void)
{
	return watchdog_running() ? wd_fd : -1;
}

int watchdog_stop_signal(void)
{
	if (__atomic_load_n(&wd_taken, __ATOMIC_ACQUIRE))
		return 0;
	return __atomic_load_n(&wd_sig, __ATOMIC_ACQUIRE);
}

int watchdog_take_stop(void)
{
	__atomic_store_n(&wd_taken, 1, __ATOMIC_RELEASE);
	return __atomic_load_n(&wd_sig, __ATOMIC_ACQUIRE);
}

int watchdog_cut(void)
{
	return watchdog_stop_signal() &&
	       clock_mono_ns() - wd_stop_ns >= WATCHDOG_CUT_MS * 1000000ull;
}

void watchdog_progress(void)
{
	if (__atomic_load_n(&wd_sig, __ATOMIC_RELAXED))
		__atomic_store_n(&wd_progress_ns, clock_mono_ns(), __ATOMIC_RELAXED);
}

void watchdog_grace_floor(int ms)
{
	wd_grace_floor_ms = ms;
}

void watchdog_phase(const char *phase, int code, int grace_ms)
{
	if (grace_ms <= 0)
		grace_ms = WATCHDOG_GRACE_MS;
	if (grace_ms < wd_grace_floor_ms)
		grace_ms = wd_grace_floor_ms;
	__atomic_store_n(&wd_grace_ms, grace_ms, __ATOMIC_RELEASE);
	__atomic_store_n(&wd_due_ns, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&wd_code, code, __ATOMIC_RELEASE);
	__atomic_store_n(&wd_phase, phase, __ATOMIC_RELEASE);
}

void watchdog_on_end(void (*fn)(void))
{
	__atomic_store_n(&wd_on_end, fn, __ATOMIC_RELEASE);
}

void watchdog_due(uint64_t by_ns, unsigned number)
{
	__atomic_store_n(&wd_due_number, number, __ATOMIC_RELAXED);
	__atomic_store_n(&wd_due_told, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&wd_due_ns, by_ns, __ATOMIC_RELEASE);
}

int watchdog_read_begin(pid_t pid, uint64_t addr)
{
	uint64_t now = clock_mono_ns(), zero;
	int i;

	if (!watchdog_running())
		return -1;
	for (i = 0; i < WATCHDOG_SLOTS; i++) {
		zero = 0;
		if (__atomic_load_n(&wd_reads[i].since, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&wd_reads[i].since, &zero, UINT64_MAX, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			/* Claimed (UINT64_MAX: never "late"); the pair first, then the time. */
			__atomic_store_n(&wd_reads[i].pid, (int)pid, __ATOMIC_RELAXED);
			__atomic_store_n(&wd_reads[i].addr, addr, __ATOMIC_RELAXED);
			__atomic_store_n(&wd_reads[i].since, now, __ATOMIC_RELEASE);
			return i;
		}
	}
	return -1;
}

void watchdog_read_end(int slot)
{
	if (slot >= 0 && slot < WATCHDOG_SLOTS)
		__atomic_store_n(&wd_reads[slot].since, 0, __ATOMIC_RELEASE);
}
