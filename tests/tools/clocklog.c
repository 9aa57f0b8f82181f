/*
 * clocklog — the tests' record of a process's thread clocks over time:
 * every INTERVAL_MS until MAX_S pass or the process ends, one block of
 * lines "T TIME_NS" (CLOCK_REALTIME, as cprof-attach's start_ns) and
 * "C COMM TID CPU_NS RUNQUEUE_NS" per thread (schedstat's first two
 * fields), read back to back so that a block spans microseconds. A test
 * then takes the blocks nearest a capture's window (its start_ns and
 * duration): read from the shell, one fork per read, the clocks came
 * hundreds of milliseconds off the window on a loaded machine.
 *
 * Usage: clocklog PID INTERVAL_MS MAX_S > FILE (run it at a high priority).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Read a small /proc file into buf (NUL-terminated, newline cut). 0 or -1. */
static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* One block for pid's threads. 0, or -1 when the process is gone. */
static int log_block(int pid)
{
	char path[320], comm[64], st[128];
	struct timespec ts;
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (!(dir = opendir(path)))
		return -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	printf("T %lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	while ((d = readdir(dir))) {
		unsigned long long cpu, rq;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", pid, d->d_name);
		if (read_small(path, comm, sizeof(comm)) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", pid, d->d_name);
		if (read_small(path, st, sizeof(st)) < 0 || sscanf(st, "%llu %llu", &cpu, &rq) != 2)
			continue;
		/* A name with spaces would split: the tests' threads have none, but keep the line whole. */
		for (char *c = comm; *c; c++)
			if (*c == ' ')
				*c = '_';
		printf("C %s %s %llu %llu\n", comm, d->d_name, cpu, rq);
	}
	closedir(dir);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec start, now, gap;
	int pid, ms;
	double max_s;

	if (argc != 4 || (pid = atoi(argv[1])) <= 0 || (ms = atoi(argv[2])) <= 0 ||
	    (max_s = atof(argv[3])) <= 0) {
		fprintf(stderr, "usage: clocklog PID INTERVAL_MS MAX_S\n");
		return 2;
	}
	gap.tv_sec = ms / 1000;
	gap.tv_nsec = (long)(ms % 1000) * 1000000L;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		if (log_block(pid) < 0)
			return 0;
		nanosleep(&gap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < max_s);
	return 0;
}
