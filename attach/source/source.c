/*
 * source.c — what every source shares: declaring the profile's types,
 * the run's cache of debug files, the profiler's own CPU, the label names, and the one
 * wait for a window's end (a series' next start waits the same way).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/capture/target.h"
#include "attach/source/source.h"
#include "common/err.h"
#include "common/exitcode.h"
#include "common/proc.h"
#include "common/watchdog.h"
#include "model/profile.h"
#include "unwind/debuginfo.h"
#include "unwind/linecache.h"

_Static_assert(LABEL_THREAD == 1u << 0 && LABEL_TID == 1u << 1 && LABEL_STATE == 1u << 2 &&
		       LABEL_SYSCALL == 1u << 3 && LABEL_PID == 1u << 4 &&
		       LABEL_PROCESS == 1u << 5 && LABEL_WAKER == 1u << (PROFILE_OWN_LABELS - 1),
	       "LABEL_* bits follow profile_own_label()'s order");

unsigned capture_label_bit(const char *key)
{
	int i = profile_own_label(key);

	return i < 0 ? 0 : 1u << i;
}

size_t capture_thread_labels(unsigned mask, const char *name, pid_t tid, pid_t pid,
			     const char *comm, struct profile_label_in *l)
{
	size_t n = 0;

	memset(l, 0, CAPTURE_THREAD_LABELS * sizeof(*l));
	if (mask & LABEL_THREAD) {
		l[n].key = "thread";
		l[n++].str = name && name[0] ? name : "?";
	}
	if (mask & LABEL_TID) {
		l[n].key = "tid";
		l[n++].num = tid;
	}
	if (mask & LABEL_PID) {
		l[n].key = "pid";
		l[n++].num = pid;
	}
	if (mask & LABEL_PROCESS) {
		l[n].key = "process";
		l[n++].str = comm && comm[0] ? comm : "?";
	}
	return n;
}

struct debuginfo *capture_debug_new(void)
{
	return debuginfo_new();
}

void capture_debug_free(struct debuginfo *d)
{
	debuginfo_free(d);
}

struct linecache *capture_line_cache_new(void)
{
	return linecache_new(NULL);
}

void capture_line_cache_free(struct linecache *c)
{
	linecache_free(c);
}

int capture_declare(const struct capture_req *r, struct profile *prof, int64_t period)
{
	const struct sample_types *ty = r->types;
	int i;

	for (i = 0; i < 4 && ty->sample[i][0]; i++)
		if (profile_add_sample_type(prof, ty->sample[i][0], ty->sample[i][1]) < 0)
			return -1;
	if (ty->default_type && profile_set_default_sample_type(prof, ty->default_type) < 0)
		return -1;
	return profile_set_period(prof, ty->period_type[0], ty->period_type[1], period);
}

double capture_self_cpu(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

int capture_stop_open(void)
{
	sigset_t set;

	if (watchdog_fd() >= 0)
		return watchdog_fd();
	proc_stop_signals(&set, 0);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int capture_stop_take(int fd)
{
	struct signalfd_siginfo si;

	if (fd < 0)
		return 0;
	if (fd == watchdog_fd())
		return watchdog_stop_signal();
	return read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si) ? (int)si.ssi_signo : 0;
}

void capture_stop_close(int fd)
{
	if (fd >= 0 && fd != watchdog_fd())
		close(fd);
}

int capture_wait(pid_t pid, int sigfd, uint64_t until, int *sig)
{
	struct signalfd_siginfo si;
	struct pollfd pfd[2];
	uint64_t now;
	sigset_t set;
	int own = -1, r = 0;

	if (sigfd < 0)
		sigfd = watchdog_fd();
	if (sigfd >= 0 && sigfd == watchdog_fd() && watchdog_stop_signal()) {
		/* Asked before this wait (during a capture's last phases). */
		if (sig)
			*sig = watchdog_stop_signal();
		return 1;
	}
	if (sigfd < 0) {
		proc_stop_signals(&set, 0);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		sigfd = own = signalfd(-1, &set, SFD_CLOEXEC);
	}
	pfd[0].fd = sigfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = (int)syscall(SYS_pidfd_open, pid, 0);
	pfd[1].events = POLLIN;
	while ((now = clock_mono_ns()) < until) {
		int ms = (int)((until - now + 999999) / 1000000);

		if (pfd[1].fd < 0 && ms > 100)
			ms = 100; /* no pidfd: look for the target's exit now and then */
		if (poll(pfd, 2, ms) < 0 && errno != EINTR)
			break;
		/* The watchdog's descriptor stays readable: its signal is asked, never read. */
		if (pfd[0].fd >= 0 && (pfd[0].revents & POLLIN) && sigfd == watchdog_fd()) {
			if (sig)
				*sig = watchdog_stop_signal();
			r = 1;
			break;
		}
		if (pfd[0].fd >= 0 && (pfd[0].revents & POLLIN) &&
		    read(pfd[0].fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (sig)
				*sig = (int)si.ssi_signo;
			r = 1;
			break;
		}
		if ((pfd[1].fd >= 0 && (pfd[1].revents & POLLIN)) ||
		    (pfd[1].fd < 0 && kill(pid, 0) < 0 && errno == ESRCH)) {
			r = 2;
			break;
		}
	}
	if (own >= 0)
		close(own);
	if (pfd[1].fd >= 0)
		close(pfd[1].fd);
	return r;
}

int capture_begin_failed(const struct target *t, int e)
{
	if (e == ESRCH || e == ENOENT || target_exited(t->pid))
		return target_gone_before(t->pid, t->comm);
	target_attach_error(t, e);
	return EXIT_ATTACH;
}
