/*
 * threads.c — the tid-keyed thread table (open addressing, linear probing,
 * tombstone-free deletion by re-inserting the rest of the cluster) and the
 * per-thread /proc readers. Each reader costs one pread(2) on a descriptor
 * opened at first use: on the sampling path the difference between that and
 * open/read/close is a factor of three.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/ptrace/threads.h"
#include "common/proc.h"

static uint32_t slot_of(const struct threads *ts, pid_t tid)
{
	return ((uint32_t)tid * 2654435761u) & (ts->nslots - 1);
}

int threads_init(struct threads *ts, pid_t pid)
{
	ts->pid = pid;
	ts->nslots = 64;
	ts->count = 0;
	ts->overflow = 0;
	ts->slots = calloc(ts->nslots, sizeof(*ts->slots));
	return ts->slots ? 0 : -1;
}

void thread_close_files(struct thread *t)
{
	int *fd[] = { &t->fd_schedstat, &t->fd_syscall, &t->fd_comm, &t->fd_stat };
	size_t i;

	for (i = 0; i < sizeof(fd) / sizeof(fd[0]); i++)
		if (*fd[i] >= 0) {
			close(*fd[i]);
			*fd[i] = -1;
		}
}

void threads_close_all_files(struct threads *ts)
{
	uint32_t i;

	for (i = 0; i < ts->nslots; i++)
		if (ts->slots[i])
			thread_close_files(ts->slots[i]);
}

static void thread_close(struct thread *t)
{
	thread_close_files(t);
	free(t);
}

void threads_release(struct threads *ts)
{
	uint32_t i;

	for (i = 0; i < ts->nslots; i++)
		if (ts->slots[i])
			thread_close(ts->slots[i]);
	free(ts->slots);
	ts->slots = NULL;
	ts->nslots = ts->count = 0;
}

struct thread *threads_get(struct threads *ts, pid_t tid)
{
	uint32_t i;

	for (i = slot_of(ts, tid); ts->slots[i]; i = (i + 1) & (ts->nslots - 1))
		if (ts->slots[i]->tid == tid)
			return ts->slots[i];
	return NULL;
}

static void slot_put(struct threads *ts, struct thread *t)
{
	uint32_t i;

	for (i = slot_of(ts, t->tid); ts->slots[i]; i = (i + 1) & (ts->nslots - 1))
		;
	ts->slots[i] = t;
}

static int grow(struct threads *ts)
{
	struct thread **old = ts->slots;
	uint32_t i, n = ts->nslots;

	ts->slots = calloc((size_t)n * 2, sizeof(*ts->slots));
	if (!ts->slots) {
		ts->slots = old;
		return -1;
	}
	ts->nslots = n * 2;
	for (i = 0; i < n; i++)
		if (old[i])
			slot_put(ts, old[i]);
	free(old);
	return 0;
}

struct thread *threads_add(struct threads *ts, pid_t tid)
{
	struct thread *t = threads_get(ts, tid);

	if (t)
		return t;
	if (ts->count >= THREADS_MAX) {
		ts->overflow++;
		return NULL;
	}
	if ((ts->count + 1) * 2 > ts->nslots && grow(ts) < 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	t->fd_schedstat = t->fd_syscall = t->fd_comm = t->fd_stat = -1;
	t->asleep_nr = -1; /* never read asleep yet */
	t->vol_permille = 1000;
	slot_put(ts, t);
	ts->count++;
	ts->generation++;
	return t;
}

void threads_remove(struct threads *ts, pid_t tid)
{
	uint32_t i, j;
	struct thread *t;

	for (i = slot_of(ts, tid); ts->slots[i]; i = (i + 1) & (ts->nslots - 1))
		if (ts->slots[i]->tid == tid)
			break;
	if (!ts->slots[i])
		return;
	thread_close(ts->slots[i]);
	ts->slots[i] = NULL;
	ts->count--;
	ts->generation++;
	/* Re-insert the rest of the cluster so probes never stop early. */
	for (j = (i + 1) & (ts->nslots - 1); ts->slots[j]; j = (j + 1) & (ts->nslots - 1)) {
		t = ts->slots[j];
		ts->slots[j] = NULL;
		slot_put(ts, t);
	}
}

uint32_t threads_tids(struct threads *ts, pid_t *out, uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i < ts->nslots && n < max; i++)
		if (ts->slots[i])
			out[n++] = ts->slots[i]->tid;
	return n;
}

static int open_file(struct threads *ts, struct thread *t, int *fd, const char *what)
{
	char p[64];

	if (*fd >= 0)
		return 0;
	snprintf(p, sizeof(p), "/proc/%d/task/%d/%s", (int)ts->pid, (int)t->tid, what);
	*fd = open(p, O_RDONLY | O_CLOEXEC);
	if (*fd < 0 && (errno == EMFILE || errno == ENFILE)) {
		/*
		 * The descriptors are a cache: out of them (more threads than
		 * the limit allows), drop every thread's and open again, rather
		 * than take a live thread for gone. A wall capture of 1000
		 * threads under ulimit -n 256 had none of them, exit 0.
		 */
		threads_close_all_files(ts);
		*fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	return *fd >= 0 ? 0 : -1;
}

int thread_read_cpu(struct threads *ts, struct thread *t, uint64_t *ns)
{
	char buf[128];
	uint64_t slices;

	if (open_file(ts, t, &t->fd_schedstat, "schedstat") < 0 ||
	    proc_pread_line(t->fd_schedstat, buf, sizeof(buf)) <= 0 ||
	    proc_schedstat(buf, ns, &t->queued_ns, &slices) < 0)
		return -1;
	t->slices = slices; /* a slice begins each time it is put on a CPU */
	return 0;
}

int thread_read_switches(struct threads *ts, struct thread *t, uint64_t *vol, uint64_t *invol)
{
	return proc_task_switches(ts->pid, t->tid, vol, invol);
}

/* "running", or "NR A1 A2 A3 A4 A5 A6 SP PC", or "-1 SP PC" */
int thread_read_syscall(struct threads *ts, struct thread *t, long *nr, uint64_t *sp,
			uint64_t *pc)
{
	char buf[256];

	if (open_file(ts, t, &t->fd_syscall, "syscall") < 0 ||
	    proc_pread_line(t->fd_syscall, buf, sizeof(buf)) <= 0)
		return -1;
	return proc_syscall(buf, nr, sp, pc);
}

int thread_read_name(struct threads *ts, struct thread *t)
{
	char buf[sizeof(t->name) + 2];
	ssize_t n;

	if (open_file(ts, t, &t->fd_comm, "comm") < 0)
		return -1;
	n = proc_pread_line(t->fd_comm, buf, sizeof(buf));
	if (n <= 0)
		return -1;
	if (buf[n - 1] == '\n')
		buf[--n] = 0;
	if ((size_t)n >= sizeof(t->name))
		n = sizeof(t->name) - 1;
	memcpy(t->name, buf, (size_t)n);
	t->name[n] = 0;
	return 0;
}

char thread_read_state(struct threads *ts, struct thread *t, int *named)
{
	char buf[512], *p, *q;
	size_t n;

	*named = 0;
	if (open_file(ts, t, &t->fd_stat, "stat") < 0 ||
	    proc_pread_line(t->fd_stat, buf, sizeof(buf)) <= 0)
		return '?';
	/* "TID (COMM) S ..." — comm may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return '?';
	/*
	 * The name as comm gives it, which escapes '\n' and '\\' (stat does
	 * not): a name holding either is left to thread_read_name().
	 */
	if ((q = strchr(buf, '(')) && q < p && (n = (size_t)(p - q - 1)) < sizeof(t->name) &&
	    !memchr(q + 1, '\n', n) && !memchr(q + 1, '\\', n)) {
		memcpy(t->name, q + 1, n);
		t->name[n] = 0;
		*named = 1;
	}
	return p[2];
}
