/*
 * session.c — the target's threads and the session's life: the start-up
 * permission check, re-reading /proc/PID/task, noticing exit and exec, the
 * watcher of stuck seizes (rescue.c). The sampling itself (seize, stop,
 * copy, detach), late stops and the poll are in stopcopy.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/ptrace/session.h"
#include "attach/capture/target.h"
#include "common/err.h"
#include "attach/ptrace/chldwake.h"
#include "common/proc.h"
#include "common/watchdog.h"

int session_init(struct session *s, pid_t pid, size_t stack_cap)
{
	sigset_t set;

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->stack_cap = stack_cap;
	s->sigfd = -1;
	s->pidfd = -1;
	s->wakeslot = chldwake_open(&s->wakefd);
	if (threads_init(&s->threads, pid) < 0)
		return error("out of memory");
	proc_stop_signals(&set, 1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (watchdog_running()) {
		/* The watchdog alone takes the stop signals: they come by watchdog_fd(). */
		sigemptyset(&set);
		sigaddset(&set, SIGCHLD);
	}
	s->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s->sigfd < 0) {
		threads_release(&s->threads);
		return error_errno("cannot create a signalfd");
	}
	/* Linux >= 5.3; without it, exit is noticed by the next rescan. */
	s->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* After the mask: the watcher must not take our stop signals either. */
	if (rescue_start(&s->rescue, pid) < 0)
		warning("cannot start a thread: an exec of %d during the capture may stall it",
			(int)pid);
	return 0;
}

void session_release(struct session *s)
{
	rescue_stop(&s->rescue);
	threads_release(&s->threads);
	if (s->sigfd >= 0)
		close(s->sigfd);
	if (s->pidfd >= 0)
		close(s->pidfd);
	s->sigfd = s->pidfd = -1;
	chldwake_close(s->wakeslot);
	s->wakeslot = s->wakefd = -1;
}

int session_start(struct session *s)
{
	char p[64], buf[256];
	int e;

	/*
	 * /proc/PID/syscall asks the kernel the same question PTRACE_SEIZE
	 * would (may this user attach?), without attaching.
	 */
	snprintf(p, sizeof(p), "/proc/%d/syscall", (int)s->pid);
	if (proc_read(p, buf, sizeof(buf)) < 0) {
		e = errno;
		/* A process that has just exited refuses too: say it is gone. */
		if (e == ENOENT || target_exited(s->pid))
			e = ESRCH;
		errno = e == EACCES ? EPERM : e;
		return -1;
	}
	target_exec_id(s->pid, &s->exe_ino, &s->start_code);
	if (session_rescan(s) < 0)
		return -1;
	return 0;
}

/* Mark tid seen in this scan; a thread new after the first scan was born during the capture. */
static void scan_one(struct session *s, pid_t tid)
{
	struct thread *t = threads_get(&s->threads, tid);

	if (!t) {
		t = threads_add(&s->threads, tid);
		if (!t)
			return;
		t->last_sample_ns = clock_mono_ns();
		/* Before the capture began, its CPU is not ours to count. */
		if (s->scan_no == 1 && !s->no_baseline &&
		    thread_read_cpu(&s->threads, t, &t->cpu_ns) < 0)
			t->cpu_ns = t->slices = 0;
		t->slices_waited = t->slices; /* 0 for one born during the capture: all its waits count */
		s->stats.threads_seen++;
	}
	t->scan_no = s->scan_no;
}

int session_rescan(struct session *s)
{
	char p[64];
	struct dirent *d;
	DIR *dir;
	pid_t *tids;
	uint32_t i, n;
	uint64_t ino, code;
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)s->pid);
	if (stat(p, &st) == 0)
		s->task_nlink = (uint64_t)st.st_nlink;
	dir = opendir(p);
	if (!dir) {
		if (errno == ENOENT || errno == ESRCH)
			s->gone = 1;
		return -1;
	}
	s->scan_no++;
	s->stats.rescans++;
	while ((d = readdir(dir))) {
		pid_t tid = (pid_t)atoi(d->d_name);

		if (tid > 0)
			scan_one(s, tid);
	}
	closedir(dir);
	/* Drop the threads that vanished (unless a stop of theirs is still due). */
	tids = malloc((s->threads.count + 1) * sizeof(*tids));
	if (tids) {
		n = threads_tids(&s->threads, tids, s->threads.count);
		for (i = 0; i < n; i++) {
			struct thread *t = threads_get(&s->threads, tids[i]);

			if (t && t->scan_no != s->scan_no && !(t->flags & THREAD_HELD))
				threads_remove(&s->threads, tids[i]);
		}
		free(tids);
	}
	if (s->threads.count == 0)
		s->gone = 1;
	if (s->scan_no > 1 && target_exec_id(s->pid, &ino, &code) == 0 &&
	    (ino != s->exe_ino || code != s->start_code))
		s->execed = 1;
	return 0;
}

int session_count_changed(struct session *s)
{
	char p[64];
	struct stat st;

	/* The kernel gives the directory one link per thread, plus two. */
	snprintf(p, sizeof(p), "/proc/%d/task", (int)s->pid);
	return stat(p, &st) < 0 || (uint64_t)st.st_nlink != s->task_nlink;
}

uint64_t session_stats_percentile(const struct session_stats *st, double pct)
{
	uint64_t want, seen = 0;
	size_t i;

	if (!st->stops)
		return 0;
	want = (uint64_t)(pct / 100.0 * (double)st->stops);
	if (want >= st->stops)
		want = st->stops - 1;
	for (i = 0; i <= SESSION_PAUSE_BUCKETS; i++) {
		seen += st->pause_hist[i];
		if (seen > want)
			return i < SESSION_PAUSE_BUCKETS ? i * 1000 + 500 : st->pause_ns_max;
	}
	return st->pause_ns_max;
}

void session_stats_add(struct session_stats *into, const struct session_stats *from)
{
	size_t i;

	into->stops += from->stops;
	into->deferred += from->deferred;
	into->blocked_reads += from->blocked_reads;
	into->torn_reads += from->torn_reads;
	into->torn_stops += from->torn_stops;
	into->repeats += from->repeats;
	into->stop_timeouts += from->stop_timeouts;
	into->seize_failures += from->seize_failures;
	into->eintr_fixed += from->eintr_fixed;
	into->signals_passed += from->signals_passed;
	into->altstack_copies += from->altstack_copies;
	into->threads_seen += from->threads_seen;
	into->rescans += from->rescans;
	into->exec_rescues += from->exec_rescues;
	into->user_stops += from->user_stops;
	into->user_stops_late += from->user_stops_late;
	into->slid += from->slid;
	into->kstacks += from->kstacks;
	into->kstack_refused |= from->kstack_refused;
	if (from->pause_ns_max > into->pause_ns_max)
		into->pause_ns_max = from->pause_ns_max;
	into->pause_ns_sum += from->pause_ns_sum;
	for (i = 0; i <= SESSION_PAUSE_BUCKETS; i++)
		into->pause_hist[i] += from->pause_hist[i];
}
