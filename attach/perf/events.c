/*
 * events.c — opening the perf events (events.h), mapping their rings,
 * and walking them. A CPU-scope capture opens one event per CPU; a
 * task-scope capture one per (thread, CPU), the first on each CPU owning
 * the ring and the others redirected into it (PERF_EVENT_IOC_SET_OUTPUT),
 * the thread list re-read until it holds no thread without events.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "attach/perf/events.h"
#include "common/proc.h"

#define LIST_PASSES 8       /* task scope: re-reads of the thread list, at most */
#define MIN_RECORDS 2       /* a ring holds at least this many full samples */

/*
 * Whether cpu is in list, the kernel's "0-3,5" form; an unreadable or
 * malformed list (empty) counts every CPU as online.
 */
static int cpu_online(int cpu, const char *list)
{
	const char *p = list;
	char *end;
	long a, b;

	if (!*p || *p == '\n')
		return 1;
	while (*p && *p != '\n') {
		a = strtol(p, &end, 10);
		if (end == p)
			return 1;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1)
				return 1;
			p = end;
		}
		if (cpu >= a && cpu <= b)
			return 1;
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return 1;
	}
	return 0;
}

static int sys_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group,
			       unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

/* The event's type and config, by what it samples (enum perf_event_what). */
static void events_kind(const struct perf_cfg *c, struct perf_event_attr *a)
{
	switch (c->event) {
	case PERF_EVENT_CLOCK:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = c->scope == PERF_SCOPE_CPU ? PERF_COUNT_SW_CPU_CLOCK
						       : PERF_COUNT_SW_TASK_CLOCK;
		a->sample_period = c->period_ns;
		/* An idle CPU's ticks are nobody's CPU time. */
		a->exclude_idle = c->scope == PERF_SCOPE_CPU;
		break;
	case PERF_EVENT_SWITCH_OUT:
	case PERF_EVENT_WAKING:
	case PERF_EVENT_PICKS:
		a->type = c->tp_id ? PERF_TYPE_TRACEPOINT : PERF_TYPE_SOFTWARE;
		a->config = c->tp_id ? c->tp_id : PERF_COUNT_SW_CONTEXT_SWITCHES;
		a->sample_period = 1;
		break;
	case PERF_EVENT_SWITCH_TIMES:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_DUMMY;
		a->context_switch = 1;
		break;
	}
}

static void events_attr(const struct perf_events *ev, struct perf_event_attr *a)
{
	const struct perf_cfg *c = &ev->cfg;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	events_kind(c, a);
	a->sample_type = ev->layout.sample_type;
	a->sample_regs_user = ev->layout.regs_mask;
	a->sample_stack_user = c->stack_bytes;
	a->disabled = 1;
	a->exclude_kernel = !!c->exclude_kernel;
	a->exclude_hv = 1;
	if (ev->layout.sample_type & PERF_LAYOUT_CALLCHAIN) {
		/* The kernel's part only: the user stack is unwound from the copy, with CFI. */
		a->exclude_callchain_user = 1;
		a->sample_max_stack = (uint16_t)ev->chain_max;
	}
	/* Names (and execs) come with the samples; the waker's are read from /proc. */
	a->comm = c->event != PERF_EVENT_WAKING && c->event != PERF_EVENT_PICKS;
	a->comm_exec = a->comm;
	/* Every record ends with its tid and time: an exec's is set against samples'. */
	a->sample_id_all = 1;
	a->inherit = c->scope == PERF_SCOPE_TASK;
	a->inherit_thread = a->inherit && ev->inherit_thread;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(ev->ring_bytes / 4);
	/* Sample times on the clock the capture's window is measured with. */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

static int fds_add(struct perf_events *ev, int fd)
{
	if (ev->nfds == ev->capfds) {
		size_t n = ev->capfds ? ev->capfds * 2 : 64;
		int *v = realloc(ev->fds, n * sizeof(*v));

		if (!v)
			return -1;
		ev->fds = v;
		ev->capfds = n;
	}
	ev->fds[ev->nfds++] = fd;
	return 0;
}

/* Map fd's ring: 1 + 2^k pages, fewer when locked memory runs short. 0 or -1. */
static int ring_map(struct perf_events *ev, struct perf_cpu_ring *r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), data = page, min;
	struct perf_event_mmap_page *mp;

	min = MIN_RECORDS * ((size_t)ev->cfg.stack_bytes + 1024);
	while (data < ev->ring_bytes)
		data <<= 1;
	for (;;) {
		r->base = mmap(NULL, page + data, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (r->base != MAP_FAILED)
			break;
		r->base = NULL;
		/* EPERM: perf_event_mlock_kb and RLIMIT_MEMLOCK spent; try half. */
		if (errno != EPERM || data / 2 < min)
			return -1;
		data /= 2;
	}
	r->map_len = page + data;
	mp = r->base;
	ev->ring_bytes = data;
	r->ring.data = (const unsigned char *)r->base + page;
	r->ring.size = data;
	r->ring.tail = __atomic_load_n(&mp->data_tail, __ATOMIC_ACQUIRE);
	r->ring.scratch = ev->scratch;
	return 0;
}

/*
 * Open the event for (pid, cpu). The first on a CPU owns the ring; later
 * ones write into it. 0, or -1 with errno (ESRCH: the thread is gone).
 */
static int event_open(struct perf_events *ev, pid_t pid, int ci)
{
	struct perf_cpu_ring *r = &ev->rings[ci];
	struct perf_event_attr a;
	int fd;

	events_attr(ev, &a);
	fd = sys_perf_event_open(&a, pid, r->cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EINVAL && a.inherit_thread) {
		/* Before Linux 5.13: no inherit_thread; forked processes' samples are filtered out. */
		ev->inherit_thread = 0;
		a.inherit_thread = 0;
		fd = sys_perf_event_open(&a, pid, r->cpu, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0) {
		ev->failed = "perf_event_open";
		return -1;
	}
	if (fds_add(ev, fd) < 0) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	if (r->fd < 0) {
		r->fd = fd;
		if (ring_map(ev, r) < 0) {
			ev->failed = "mmap";
			return -1;
		}
		return 0;
	}
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) < 0) {
		ev->failed = "PERF_EVENT_IOC_SET_OUTPUT";
		return -1;
	}
	return 0;
}

/* Whether tid is in seen[0..n) (sorted). */
static int tid_seen(const pid_t *seen, size_t n, pid_t tid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (seen[mid] == tid)
			return 1;
		if (seen[mid] < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/*
 * One pass over /proc/PID/task: events for every thread not in seen.
 * Returns how many threads were new, or -1 with errno.
 */
static int task_pass(struct perf_events *ev, pid_t **seen, size_t *nseen, size_t *cap)
{
	char path[64];
	struct dirent *d;
	size_t n0 = *nseen;
	int ci, added = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)ev->cfg.pid);
	dir = opendir(path);
	if (!dir) {
		ev->failed = "/proc/PID/task";
		errno = errno == ENOENT ? ESRCH : errno;
		return -1;
	}
	while ((d = readdir(dir))) {
		pid_t tid = (pid_t)atoi(d->d_name);

		if (tid <= 0 || tid_seen(*seen, n0, tid))
			continue;
		for (ci = 0; ci < ev->nrings; ci++)
			if (event_open(ev, tid, ci) < 0)
				break;
		if (ci < ev->nrings) {
			if (errno == ESRCH)
				continue; /* it ended meanwhile */
			closedir(dir);
			return -1;
		}
		if (*nseen == *cap) {
			size_t c2 = *cap ? *cap * 2 : 256;
			pid_t *v = realloc(*seen, c2 * sizeof(*v));

			if (!v) {
				closedir(dir);
				errno = ENOMEM;
				return -1;
			}
			*seen = v;
			*cap = c2;
		}
		(*seen)[(*nseen)++] = tid;
		added++;
	}
	closedir(dir);
	qsort(*seen, *nseen, sizeof(**seen), pid_cmp);
	ev->threads = *nseen;
	return added;
}

/*
 * Task scope: every thread, and again for the threads born while we
 * worked (a thread created before its creator had events inherits none).
 */
static int task_open_all(struct perf_events *ev)
{
	pid_t *seen = NULL;
	size_t nseen = 0, cap = 0;
	int pass, r = 0;

	/* One descriptor per thread and CPU: main() took the hard limit. */
	for (pass = 0; pass < LIST_PASSES; pass++) {
		r = task_pass(ev, &seen, &nseen, &cap);
		if (r <= 0)
			break;
	}
	free(seen);
	if (r == 0 && nseen == 0) {
		errno = ESRCH;
		return -1;
	}
	return r < 0 ? -1 : 0;
}

int perf_events_init(struct perf_events *ev, const struct perf_cfg *cfg)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	char online[256];
	int i, e;

	memset(ev, 0, sizeof(*ev));
	ev->cfg = *cfg;
	ev->cfg.stack_bytes &= ~7u;
	if (ev->cfg.stack_bytes > PERF_STACK_MAX)
		ev->cfg.stack_bytes = PERF_STACK_MAX;
	ev->layout.sample_type = PERF_LAYOUT_TID | PERF_LAYOUT_TIME;
	if (cfg->event == PERF_EVENT_CLOCK)
		ev->layout.sample_type |= PERF_LAYOUT_PERIOD;
	if (cfg->event != PERF_EVENT_SWITCH_TIMES && cfg->event != PERF_EVENT_PICKS)
		ev->layout.sample_type |= PERF_LAYOUT_REGS_USER | PERF_LAYOUT_STACK_USER;
	else
		ev->cfg.stack_bytes = 0;
	if (cfg->tp_id && cfg->event != PERF_EVENT_CLOCK && cfg->event != PERF_EVENT_SWITCH_TIMES)
		ev->layout.sample_type |= PERF_LAYOUT_RAW;
	if (ev->cfg.kernel_chain && !ev->cfg.exclude_kernel &&
	    cfg->event != PERF_EVENT_SWITCH_TIMES && cfg->event != PERF_EVENT_PICKS) {
		char max[32];
		long m;

		ev->layout.sample_type |= PERF_LAYOUT_CALLCHAIN;
		ev->chain_max = PERF_CHAIN_MAX;
		/* A limit above kernel.perf_event_max_stack is refused (EOVERFLOW). */
		if (proc_read("/proc/sys/kernel/perf_event_max_stack", max, sizeof(max)) > 0 &&
		    (m = strtol(max, NULL, 10)) > 0 && m < (long)ev->chain_max)
			ev->chain_max = (unsigned)m;
	}
	ev->layout.regs_mask = (ev->layout.sample_type & PERF_LAYOUT_REGS_USER) ? PERF_REGS_MASK : 0;
	ev->ring_bytes = cfg->ring_bytes;
	ev->inherit_thread = 1;
	if (ncpu < 1)
		ncpu = 1;
	if (proc_read("/sys/devices/system/cpu/online", online, sizeof(online)) <= 0)
		online[0] = 0;
	ev->rings = calloc((size_t)ncpu, sizeof(*ev->rings));
	ev->scratch = malloc(PERF_REC_MAX);
	if (!ev->rings || !ev->scratch) {
		errno = ENOMEM;
		goto err;
	}
	ev->slots = (int)ncpu;
	for (i = 0; i < ncpu; i++) {
		if (!cpu_online(i, online))
			continue;
		ev->rings[ev->nrings].cpu = i;
		ev->rings[ev->nrings].fd = -1;
		if (cfg->scope == PERF_SCOPE_TASK) {
			ev->nrings++;
			continue;
		}
		if (event_open(ev, -1, ev->nrings) < 0)
			goto err;
		ev->nrings++;
	}
	if (!ev->nrings) {
		errno = ENODEV;
		goto err;
	}
	if (cfg->scope == PERF_SCOPE_TASK && task_open_all(ev) < 0)
		goto err;
	return 0;
err:
	e = errno;
	perf_events_release(ev);
	errno = e;
	return -1;
}

static int events_ioctl(struct perf_events *ev, unsigned long req)
{
	size_t i;
	int r = 0;

	for (i = 0; i < ev->nfds; i++)
		if (ioctl(ev->fds[i], req, 0) < 0)
			r = -1;
	return r;
}

int perf_events_set_period(struct perf_events *ev, uint64_t period_ns)
{
	size_t i;
	int r = 0;

	for (i = 0; i < ev->nfds; i++)
		if (ioctl(ev->fds[i], PERF_EVENT_IOC_PERIOD, &period_ns) < 0)
			r = -1;
	return r;
}

int perf_events_filter(struct perf_events *ev, const char *filter)
{
	size_t i;
	int r = 0;

	for (i = 0; i < ev->nfds; i++)
		if (ioctl(ev->fds[i], PERF_EVENT_IOC_SET_FILTER, filter) < 0)
			r = -1;
	return r;
}

int perf_events_enable(struct perf_events *ev)
{
	return events_ioctl(ev, PERF_EVENT_IOC_ENABLE);
}

int perf_events_disable(struct perf_events *ev)
{
	return events_ioctl(ev, PERF_EVENT_IOC_DISABLE);
}

void perf_events_release(struct perf_events *ev)
{
	size_t i;
	int c;

	for (c = 0; ev->rings && c < ev->slots; c++)
		if (ev->rings[c].base)
			munmap(ev->rings[c].base, ev->rings[c].map_len);
	for (i = 0; i < ev->nfds; i++)
		close(ev->fds[i]);
	free(ev->fds);
	free(ev->rings);
	free(ev->scratch);
	ev->fds = NULL;
	ev->rings = NULL;
	ev->scratch = NULL;
	ev->nfds = ev->capfds = 0;
	ev->nrings = 0;
}

uint64_t perf_events_drain(struct perf_events *ev, perf_record_fn *fn, void *ctx)
{
	struct perf_event_mmap_page *mp;
	const unsigned char *rec;
	uint64_t head, n = 0;
	size_t len;
	int c, r;

	for (c = 0; c < ev->nrings; c++) {
		if (!ev->rings[c].base)
			continue;
		mp = ev->rings[c].base;
		head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		while ((r = ring_next(&ev->rings[c].ring, head, &rec, &len)) > 0) {
			fn(ctx, rec, len);
			n++;
		}
		/* Our reads of the data are done before the kernel may reuse it. */
		__atomic_store_n(&mp->data_tail, ev->rings[c].ring.tail, __ATOMIC_RELEASE);
	}
	return n;
}

void perf_events_scan(struct perf_events *ev, perf_record_fn *fn, void *ctx)
{
	struct perf_event_mmap_page *mp;
	struct perf_ring peek;
	const unsigned char *rec;
	uint64_t head;
	size_t len;
	int c;

	for (c = 0; c < ev->nrings; c++) {
		if (!ev->rings[c].base)
			continue;
		mp = ev->rings[c].base;
		head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		/* A copy of the reader: its tail moves, the ring's does not. */
		peek = ev->rings[c].ring;
		while (ring_next(&peek, head, &rec, &len) > 0)
			fn(ctx, rec, len);
	}
}

uint64_t perf_events_corrupt(const struct perf_events *ev)
{
	uint64_t n = 0;
	int c;

	for (c = 0; c < ev->nrings; c++)
		n += ev->rings[c].ring.corrupt;
	return n;
}
