/*
 * perfscope — how three ways of opening perf clock events see a process,
 * for the choice the perf sampler made (attach/perf/events.h). Samples
 * carry only the tid and the period (no stack: the mechanism alone), and
 * the sampled CPU is set against the process's CPU clock:
 *   thread   one task-clock event and ring per thread (cpu -1), the thread
 *            list re-read every RESCAN_MS for new threads;
 *   inherit  one task-clock event per thread and CPU with inherit, into one
 *            ring per CPU (what ddprof does);
 *   cpu      one cpu-clock event per CPU for every task, filtered by pid.
 * Prints the CPU the samples stand for, split between threads alive at the
 * end and threads that ended, against the process's clock and the live
 * threads' clocks; the events, rings and descriptors used; the set-up
 * time and this program's own CPU.
 *
 * Usage: perfscope PID SECONDS thread|inherit|cpu [HZ [RESCAN_MS]]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAXEV 65536
#define MAXT 65536
#define DATA_PAGES 16

struct ring {
	int fd;
	struct perf_event_mmap_page *mp;
	unsigned char *data;
	uint64_t size;
};

static struct ring rings[MAXEV];
static int nrings, fds[MAXEV], nfds;
static pid_t known[MAXT];
static int nknown;
static uint64_t sampled_ns[MAXT]; /* by index in known[], or the last slot for unknown tids */
static pid_t sampled_tid[MAXT];
static int nsampled;
static long page;

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t process_cpu(pid_t pid)
{
	return now_ns((clockid_t)((~(unsigned)pid << 3) | 2));
}

static uint64_t thread_cpu(pid_t pid, pid_t tid)
{
	char p[96];
	unsigned long long v = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	if ((f = fopen(p, "r"))) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static int open_event(int cpuwide, int inherit, pid_t pid, int cpu, uint64_t period, int group)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = cpuwide ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = period;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_PERIOD;
	a.disabled = 1;
	a.exclude_idle = !!cpuwide;
	a.inherit = !!inherit;
	a.inherit_thread = !!inherit;
	fd = (int)syscall(SYS_perf_event_open, &a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0 && nfds < MAXEV)
		fds[nfds++] = fd;
	return fd;
}

static int map_ring(int fd)
{
	struct ring *r = &rings[nrings];
	void *m = mmap(NULL, (size_t)page * (1 + DATA_PAGES), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (m == MAP_FAILED || nrings >= MAXEV)
		return -1;
	r->fd = fd;
	r->mp = m;
	r->data = (unsigned char *)m + page;
	r->size = (uint64_t)page * DATA_PAGES;
	nrings++;
	return 0;
}

static void count(pid_t pid, uint32_t spid, uint32_t tid, uint64_t period)
{
	int i;

	if ((pid_t)spid != pid)
		return;
	for (i = 0; i < nsampled; i++)
		if (sampled_tid[i] == (pid_t)tid)
			break;
	if (i == nsampled) {
		if (nsampled == MAXT)
			return;
		sampled_tid[nsampled++] = (pid_t)tid;
	}
	sampled_ns[i] += period;
}

static void drain(pid_t pid)
{
	int i;

	for (i = 0; i < nrings; i++) {
		struct ring *r = &rings[i];
		uint64_t head = __atomic_load_n(&r->mp->data_head, __ATOMIC_ACQUIRE), tail = r->mp->data_tail;

		while (tail + 8 <= head) {
			struct perf_event_header h;
			unsigned char rec[64];
			uint64_t k;

			for (k = 0; k < sizeof(h); k++)
				((unsigned char *)&h)[k] = r->data[(tail + k) & (r->size - 1)];
			if (h.size < sizeof(h) || tail + h.size > head)
				break;
			if (h.type == PERF_RECORD_SAMPLE && h.size >= 8 + 16 && h.size <= sizeof(rec)) {
				uint32_t ids[2];
				uint64_t period;

				for (k = 0; k < h.size; k++)
					rec[k] = r->data[(tail + k) & (r->size - 1)];
				memcpy(ids, rec + 8, 8);
				memcpy(&period, rec + 16, 8);
				count(pid, ids[0], ids[1], period);
			}
			tail += h.size;
		}
		__atomic_store_n(&r->mp->data_tail, tail, __ATOMIC_RELEASE);
	}
}

static int is_known(pid_t tid)
{
	int i;

	for (i = 0; i < nknown; i++)
		if (known[i] == tid)
			return 1;
	return 0;
}

/* Events for threads of pid not yet known; returns how many threads were new. */
static int scan(pid_t pid, int inherit, int ncpu, uint64_t period, int enable)
{
	char p[64];
	struct dirent *d;
	DIR *dir;
	int added = 0, c, fd;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(p)))
		return 0;
	while ((d = readdir(dir))) {
		pid_t tid = (pid_t)atoi(d->d_name);

		if (tid <= 0 || is_known(tid) || nknown == MAXT)
			continue;
		if (!inherit) {
			fd = open_event(0, 0, tid, -1, period, -1);
			if (fd < 0 || map_ring(fd) < 0)
				continue;
			if (enable)
				ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		} else {
			for (c = 0; c < ncpu; c++) {
				fd = open_event(0, 1, tid, c, period, -1);
				if (fd < 0)
					break;
				if (nknown == 0 || c >= nrings)
					map_ring(fd);
				else
					ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, rings[c].fd);
			}
		}
		known[nknown++] = tid;
		added++;
	}
	closedir(dir);
	return added;
}

int main(int argc, char **argv)
{
	pid_t pid, live[MAXT];
	uint64_t period, t0, t1, p0, p1, deadline, live_cpu0[MAXT], live_ns = 0, sampled_live = 0,
		sampled_all = 0, setup_ns;
	int secs, hz = 100, rescan_ms = 10, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), i, j, nlive = 0,
	    later = 0, at_start;
	const char *mode;
	struct rusage ru;
	struct rlimit rl;
	DIR *dir;
	struct dirent *d;
	char p[64];

	if (argc < 4) {
		fprintf(stderr, "usage: perfscope PID SECONDS thread|inherit|cpu [HZ [RESCAN_MS]]\n");
		return 2;
	}
	pid = atoi(argv[1]);
	secs = atoi(argv[2]);
	mode = argv[3];
	if (argc > 4)
		hz = atoi(argv[4]);
	if (argc > 5)
		rescan_ms = atoi(argv[5]);
	page = sysconf(_SC_PAGESIZE);
	period = 1000000000ull / (uint64_t)hz;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* Every thread's clock at the start. */
	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	if ((dir = opendir(p))) {
		while ((d = readdir(dir)) && nlive < MAXT)
			if (atoi(d->d_name) > 0) {
				live[nlive] = atoi(d->d_name);
				live_cpu0[nlive] = thread_cpu(pid, live[nlive]);
				nlive++;
			}
		closedir(dir);
	}
	t0 = now_ns(CLOCK_MONOTONIC);
	if (!strcmp(mode, "cpu")) {
		for (i = 0; i < ncpu; i++) {
			int fd = open_event(1, 0, -1, i, period, -1);

			if (fd < 0 || map_ring(fd) < 0) {
				perror("perf_event_open");
				return 1;
			}
		}
	} else {
		while (scan(pid, !strcmp(mode, "inherit"), ncpu, period, 0) > 0)
			;
	}
	at_start = nknown;
	for (i = 0; i < nfds; i++)
		ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
	p0 = process_cpu(pid);
	setup_ns = now_ns(CLOCK_MONOTONIC) - t0;
	t1 = now_ns(CLOCK_MONOTONIC);
	deadline = t1 + (uint64_t)secs * 1000000000ull;
	while (now_ns(CLOCK_MONOTONIC) < deadline) {
		usleep((useconds_t)rescan_ms * 1000);
		if (!strcmp(mode, "thread"))
			later += scan(pid, 0, ncpu, period, 1);
		drain(pid);
	}
	for (i = 0; i < nfds; i++)
		ioctl(fds[i], PERF_EVENT_IOC_DISABLE, 0);
	p1 = process_cpu(pid);
	drain(pid);
	/* The threads alive at the end, and their CPU over the window. */
	if ((dir = opendir(p))) {
		while ((d = readdir(dir))) {
			pid_t tid = atoi(d->d_name);
			uint64_t c0 = 0;

			if (tid <= 0)
				continue;
			for (j = 0; j < nlive; j++)
				if (live[j] == tid)
					c0 = live_cpu0[j];
			live_ns += thread_cpu(pid, tid) - c0;
			for (j = 0; j < nsampled; j++)
				if (sampled_tid[j] == tid)
					sampled_live += sampled_ns[j];
		}
		closedir(dir);
	}
	for (j = 0; j < nsampled; j++)
		sampled_all += sampled_ns[j];
	getrusage(RUSAGE_SELF, &ru);
	printf("%-8s process CPU %.0f ms: live threads %.0f ms, ended threads %.0f ms; sampled %.0f ms "
	       "(%.0f%%): live %.0f ms, ended %.0f ms (%.0f%% of theirs); %d threads with events at the "
	       "start, %d found later; %d events, %d rings, %ld KiB of rings; set-up %.1f ms; own CPU "
	       "%.0f ms\n",
	       mode, (p1 - p0) / 1e6, live_ns / 1e6, (p1 - p0 > live_ns ? p1 - p0 - live_ns : 0) / 1e6,
	       sampled_all / 1e6, 100.0 * sampled_all / (double)(p1 - p0), sampled_live / 1e6,
	       (sampled_all - sampled_live) / 1e6,
	       p1 - p0 > live_ns ? 100.0 * (sampled_all - sampled_live) / (double)(p1 - p0 - live_ns) : 0,
	       at_start, later, nfds, nrings, (long)nrings * (1 + DATA_PAGES) * page / 1024,
	       setup_ns / 1e6,
	       (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
		       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3);
	return 0;
}
