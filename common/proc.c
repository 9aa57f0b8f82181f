/*
 * proc.c — bounded reads of /proc files. /proc files report a size of 0, so
 * the only safe way to read one is to read until EOF into a fixed buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/proc.h"

ssize_t proc_pread(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	if (cap == 0) {
		errno = EINVAL;
		return -1;
	}
	while (n < cap - 1) {
		r = pread(fd, buf + n, cap - 1 - n, (off_t)n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			buf[n] = 0;
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	if (n == cap - 1) {
		char c;

		if (pread(fd, &c, 1, (off_t)n) == 1) {
			errno = EFBIG;
			return (ssize_t)n;
		}
	}
	return (ssize_t)n;
}

ssize_t proc_pread_line(int fd, char *buf, size_t cap)
{
	ssize_t r;

	if (cap < 2) {
		errno = EINVAL;
		return -1;
	}
	do
		r = pread(fd, buf, cap - 1, 0);
	while (r < 0 && errno == EINTR);
	if (r > 0 && (size_t)r < cap - 1 && buf[r - 1] == '\n') {
		buf[r] = 0;
		return r;
	}
	return proc_pread(fd, buf, cap);
}

int proc_syscall(const char *line, long *nr, uint64_t *sp, uint64_t *pc)
{
	unsigned long long v[9];
	const char *p;
	char *end;
	int n = 0;

	if (!strncmp(line, "running", 7))
		return 1;
	errno = 0;
	*nr = strtol(line, &end, 10);
	if (end == line || errno)
		return -1;
	for (p = end; n < 9; p = end) {
		v[n] = strtoull(p, &end, 16);
		if (end == p)
			break;
		n++;
	}
	if (*nr >= 0 && n == 8) {
		*sp = v[6];
		*pc = v[7];
	} else if (*nr == -1 && n == 2) {
		*sp = v[0];
		*pc = v[1];
	} else {
		return -1;
	}
	return 0;
}

int proc_schedstat(const char *line, uint64_t *cpu_ns, uint64_t *queued_ns, uint64_t *slices)
{
	uint64_t q;
	char *end;

	errno = 0;
	*cpu_ns = strtoull(line, &end, 10);
	if (end == line || errno)
		return -1;
	q = strtoull(end, &end, 10);
	if (queued_ns)
		*queued_ns = q;
	*slices = strtoull(end, NULL, 10);
	return 0;
}

int proc_stat_times(const char *stat, uint64_t *utime, uint64_t *stime)
{
	const char *q = strrchr(stat, ')');
	char *end;
	int field;

	/* From field 2's end: the space before field 3, ..., before field 14. */
	for (field = 2; q && field < 14; field++)
		q = strchr(q + 1, ' ');
	if (!q)
		return -1;
	errno = 0;
	*utime = strtoull(q + 1, &end, 10);
	if (end == q + 1 || *end != ' ' || errno)
		return -1;
	q = end;
	*stime = strtoull(q + 1, &end, 10);
	if (end == q + 1 || errno)
		return -1;
	return 0;
}

ssize_t proc_read(const char *path, char *buf, size_t cap)
{
	ssize_t r;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (cap)
			buf[0] = 0;
		return -1;
	}
	r = proc_pread(fd, buf, cap);
	e = errno;
	close(fd);
	errno = e;
	return r;
}

uint64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clock_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clock_process_cpu_ns(pid_t pid)
{
	struct timespec ts;
	clockid_t c = (clockid_t)((~(unsigned)pid << 3) | 2); /* CPUCLOCK_SCHED, process-wide */

	if (clock_gettime(c, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void proc_stop_signals(sigset_t *set, int with_child)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	if (with_child)
		sigaddset(set, SIGCHLD);
}
int proc_task_switches(pid_t pid, pid_t tid, uint64_t *vol, uint64_t *invol)
{
	static const char kv[] = "\nvoluntary_ctxt_switches:", ki[] = "\nnonvoluntary_ctxt_switches:";
	char p[64], buf[4096], *v, *n;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (proc_read(p, buf, sizeof(buf)) <= 0)
		return -1;
	v = strstr(buf, kv);
	n = strstr(buf, ki);
	if (!v || !n)
		return -1;
	*vol = strtoull(v + sizeof(kv) - 1, NULL, 10);
	*invol = strtoull(n + sizeof(ki) - 1, NULL, 10);
	return 0;
}

