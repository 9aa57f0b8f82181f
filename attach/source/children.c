/*
 * children.c — walking a process's descendants through /proc. One small
 * file read per thread of each process visited (its "children" list) and
 * one stat per descendant for its CPU; done at the start and the end of a
 * capture (for a process of many threads, its main thread's list only),
 * and once a second during a --children capture, never on the sampling
 * path.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/source/children.h"
#include "common/err.h"
#include "common/proc.h"

/*
 * The hint (children_cpu) of a process with more threads than this reads
 * only its main thread's children: on 3000 idle threads the two walks of
 * every thread's list were a quarter of a perf capture's own CPU, for a
 * note that a forking main thread (nginx, PostgreSQL) feeds anyway.
 */
#define HINT_MAX_THREADS 256

/* Append the children of thread tid (a name in /proc/p/task) to out[*n..max); no duplicates. */
static void add_task_children(pid_t p, const char *tid, pid_t *out, int *n, int max)
{
	char path[96], buf[4096], *s, *end;
	long c;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)p, tid);
	if (proc_read(path, buf, sizeof(buf)) <= 0)
		return;
	for (s = buf; *n < max; s = end) {
		c = strtol(s, &end, 10);
		if (end == s || c <= 0 || c > 0x3fffffff)
			break;
		for (i = 0; i < *n && out[i] != (pid_t)c; i++)
			;
		if (i == *n && (pid_t)c != p)
			out[(*n)++] = (pid_t)c;
	}
}

/* Append p's children (from each of its threads) to out[*n..max); no duplicates. */
static void add_children(pid_t p, pid_t *out, int *n, int max)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)p);
	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir)) && *n < max)
		if (d->d_name[0] >= '0' && d->d_name[0] <= '9')
			add_task_children(p, d->d_name, out, n, max);
	closedir(dir);
}

/* Breadth first from what out[0..n) holds: out grows behind i. */
static int add_descendants(pid_t *out, int n, int max)
{
	int i;

	for (i = 0; i < n; i++)
		add_children(out[i], out, &n, max);
	return n;
}

int children_list(pid_t root, pid_t *out, int max)
{
	int n = 0;

	add_children(root, out, &n, max);
	return add_descendants(out, n, max);
}

/* The "Threads:" count of /proc/p/status; 0 when unknown. */
static long thread_count(pid_t p)
{
	char path[64], buf[4096], *s;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)p);
	if (proc_read(path, buf, sizeof(buf)) <= 0 || !(s = strstr(buf, "\nThreads:")))
		return 0;
	return strtol(s + 9, NULL, 10);
}

/* comm and utime+stime of pid from /proc/PID/stat. 0 or -1. */
static int read_cpu(pid_t pid, struct child_cpu *c)
{
	char path[64], buf[1024], *open_p, *close_p;
	uint64_t ut, st;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (proc_read(path, buf, sizeof(buf)) <= 0 || !(open_p = strchr(buf, '(')) ||
	    !(close_p = strrchr(buf, ')')) || close_p < open_p)
		return -1;
	len = (size_t)(close_p - open_p - 1);
	if (len >= sizeof(c->comm))
		len = sizeof(c->comm) - 1;
	memcpy(c->comm, open_p + 1, len);
	c->comm[len] = 0;
	if (proc_stat_times(buf, &ut, &st) < 0)
		return -1;
	c->pid = pid;
	c->cpu_ticks = ut + st;
	return 0;
}

int children_cpu(pid_t root, struct child_cpu *out, int max)
{
	pid_t pids[CHILDREN_MAX];
	int n, i, k = 0;

	if (max > CHILDREN_MAX)
		max = CHILDREN_MAX;
	if (thread_count(root) > HINT_MAX_THREADS) {
		char leader[16];

		n = 0;
		snprintf(leader, sizeof(leader), "%d", (int)root);
		add_task_children(root, leader, pids, &n, max);
		n = add_descendants(pids, n, max);
	} else {
		n = children_list(root, pids, max);
	}
	for (i = 0; i < n; i++)
		if (read_cpu(pids[i], &out[k]) == 0)
			k++;
	return k;
}

static int by_cpu_desc(const void *a, const void *b)
{
	const struct child_cpu *x = a, *y = b;

	return x->cpu_ticks < y->cpu_ticks ? 1 : x->cpu_ticks > y->cpu_ticks ? -1 : 0;
}

int children_note(pid_t root, const char *comm, const struct child_cpu *before, int nbefore,
		  uint64_t own_ns, uint64_t window_ns)
{
	struct child_cpu now[CHILDREN_MAX];
	char line[512];
	uint64_t total = 0;
	size_t len;
	int n, i, j, busy = 0;

	n = children_cpu(root, now, CHILDREN_MAX);
	for (i = 0; i < n; i++) {
		/* A child born during the capture counts all its CPU. */
		for (j = 0; j < nbefore && before[j].pid != now[i].pid; j++)
			;
		if (j < nbefore)
			now[i].cpu_ticks -= now[i].cpu_ticks >= before[j].cpu_ticks ? before[j].cpu_ticks
										      : now[i].cpu_ticks;
		total += now[i].cpu_ticks;
		busy += now[i].cpu_ticks > 0;
	}
	if (!total || own_ns > window_ns / 100 ||
	    (double)total * 1e9 / (double)sysconf(_SC_CLK_TCK) < 10.0 * (double)own_ns)
		return 0;
	qsort(now, (size_t)n, sizeof(now[0]), by_cpu_desc);
	len = (size_t)snprintf(line, sizeof(line), "%d processes under it did:", busy);
	for (i = 0; i < n && i < 5 && now[i].cpu_ticks && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s %d (%s) %.0f%%",
					i ? "," : "", (int)now[i].pid, now[i].comm,
					100.0 * (double)now[i].cpu_ticks / (double)total);
	if (busy > 5 && len < sizeof(line))
		snprintf(line + len, sizeof(line) - len, ", ...");
	if (own_ns)
		note("%d (%s) used almost no CPU during the capture (%.1f ms), but %s; --children "
		     "profiles them too", (int)root, comm, (double)own_ns / 1e6, line);
	else
		note("%d (%s) used no CPU during the capture, but %s; --children profiles them too",
		     (int)root, comm, line);
	return busy;
}
