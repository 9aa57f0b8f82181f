/*
 * family.c — starting and ending the tracers of a --children capture. A
 * descendant found by a look at the process tree (at the start, then once
 * a second) gets its own sampler thread with the root's settings and the
 * time left; it is traced exactly like the root, by its own tracer
 * thread, so nothing on the sampling path knows about families.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/source/family.h"
#include "common/proc.h"

void family_init(struct family *f, pid_t root, const struct sampler_cfg *proto, uint64_t deadline_ns,
		 int *stop_all)
{
	memset(f, 0, sizeof(*f));
	f->root = root;
	f->proto = proto;
	f->deadline_ns = deadline_ns;
	f->stop_all = stop_all;
}

static int family_has(const struct family *f, pid_t pid)
{
	int i;

	for (i = 0; i < f->n; i++)
		if (f->m[i]->sm.cfg.pid == pid)
			return 1;
	return 0;
}

static void read_comm(pid_t pid, char *comm, size_t cap)
{
	char p[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
	n = proc_read(p, comm, cap);
	if (n <= 0)
		snprintf(comm, cap, "?");
	else if (comm[n - 1] == '\n')
		comm[n - 1] = 0;
}

/* Start a sampler thread for pid. 0 or -1. */
static int family_start(struct family *f, pid_t pid, uint64_t now)
{
	struct family_member *m = calloc(1, sizeof(*m));

	if (!m)
		return -1;
	read_comm(pid, m->comm, sizeof(m->comm));
	m->sm.cfg = *f->proto;
	m->sm.cfg.pid = pid;
	m->sm.cfg.comm = m->comm;
	m->sm.cfg.root = 0;
	m->sm.cfg.quiet = 1;
	m->sm.cfg.duration_ns = f->deadline_ns - now;
	m->sm.cfg.stop_all = f->stop_all;
	if (queue_add_producer(m->sm.cfg.queue) < 0) {
		free(m);
		return -1;
	}
	if (pthread_create(&m->thread, NULL, sampler_main, &m->sm)) {
		queue_close(m->sm.cfg.queue);
		free(m);
		return -1;
	}
	f->m[f->n++] = m;
	return 0;
}

int family_adopt(struct family *f)
{
	pid_t pids[CHILDREN_MAX];
	uint64_t now = clock_mono_ns();
	int n, i, started = 0;

	if (now + 10000000u >= f->deadline_ns || __atomic_load_n(f->stop_all, __ATOMIC_RELAXED))
		return 0;
	n = children_list(f->root, pids, CHILDREN_MAX);
	for (i = 0; i < n && f->n < CHILDREN_MAX; i++)
		if (!family_has(f, pids[i]) && family_start(f, pids[i], now) == 0)
			started++;
	return started;
}

void family_join(struct family *f)
{
	int i;

	for (i = 0; i < f->n; i++) {
		pthread_join(f->m[i]->thread, NULL);
		if (f->m[i]->sm.res.attach_errno)
			f->attach_failures++;
	}
}

void family_release(struct family *f)
{
	int i;

	for (i = 0; i < f->n; i++)
		free(f->m[i]);
	f->n = 0;
}
