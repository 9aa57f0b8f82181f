/*
 * perfproc.c — the members of a perf capture's family (perfproc.h): made
 * when a process is adopted (its map, labels, completions and clocks),
 * found for each record by pid and time, freed at the end.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/capture/target.h"
#include "attach/source/labelsrc.h"
#include "attach/source/perfproc.h"
#include "common/proc.h"

#define NAMES_MAX 65536 /* thread names kept; later threads get the process's */

void pfam_init(struct pfam *f, const struct capture_req *q, struct profile *prof,
	       struct perf_stats *st)
{
	memset(f, 0, sizeof(*f));
	f->q = q;
	f->prof = prof;
	f->st = st;
	f->labels = q->labels | (q->children ? LABEL_PID | LABEL_PROCESS : 0);
}

static void pcap_release(struct pcap *c)
{
	recorder_free(c->rec);
	altstack_release(&c->alt);
	stackhole_release(&c->hole);
	labelsrc_free(c->lab);
	tnames_release(&c->names);
	settle_release(&c->settle);
	u64map_release(&c->cpu0);
	u64map_release(&c->slices0);
	if (c->pidfd >= 0)
		close(c->pidfd);
	free(c);
}

int pcap_ready(struct pcap *c)
{
	struct pfam *f = c->fam;
	struct pcap *root = f->m[0];
	size_t cap = f->q->stack_cap;

	if (c->rec)
		return 0;
	if (c->unready) {
		errno = EACCES;
		return -1;
	}
	if (!(c->rec = recorder_new(f->prof, c->pid, RECORD_MAX_DEPTH))) {
		c->unready = 1;
		if (f->n && c != root)
			f->adopt_failures++;
		return -1;
	}
	c->lab = labelsrc_new(c->pid);
	/*
	 * Above what perf copies, the ptrace sampler's cap (--stack-size);
	 * a descendant takes the root's buffers (one completion at a time).
	 */
	if (c == root || !f->n) {
		if (altstack_init(&c->alt, c->pid, cap) == 0)
			recorder_add_refill(c->rec, RECORDER_REFILL_SIGNAL, altstack_complete, &c->alt);
		if (stackhole_init(&c->hole, c->pid, cap) == 0)
			recorder_add_refill(c->rec, RECORDER_REFILL_ANY, stackhole_complete, &c->hole);
		return 0;
	}
	if (root->alt.buf) {
		altstack_init_shared(&c->alt, c->pid, &root->alt);
		recorder_add_refill(c->rec, RECORDER_REFILL_SIGNAL, altstack_complete, &c->alt);
	}
	if (root->hole.buf) {
		stackhole_init_shared(&c->hole, c->pid, &root->hole);
		recorder_add_refill(c->rec, RECORDER_REFILL_ANY, stackhole_complete, &c->hole);
	}
	return 0;
}

struct pcap *pfam_adopt_one(struct pfam *f, pid_t pid, const char *comm, uint64_t since)
{
	const struct capture_req *q = f->q;
	struct pcap *c;
	char path[64], *nl;
	int e;

	if (f->n > CHILDREN_MAX) {
		errno = ENOSPC;
		return NULL;
	}
	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	c->q = q;
	c->pid = pid;
	c->pidfd = -1;
	c->ev = &f->ev;
	c->st = f->st;
	c->labels = f->labels;
	c->since = since;
	c->comm = comm;
	if (!comm) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		if (proc_read(path, c->comm_buf, sizeof(c->comm_buf)) <= 0)
			snprintf(c->comm_buf, sizeof(c->comm_buf), "?");
		if ((nl = strchr(c->comm_buf, '\n')))
			*nl = 0;
		c->comm = c->comm_buf;
	}
	tnames_init(&c->names, pid, c->comm);
	settle_init(&c->settle);
	u64map_init(&c->cpu0, NAMES_MAX);
	u64map_init(&c->slices0, NAMES_MAX);
	/* The program first, as near as can be to the read of its name (perf.c). */
	target_exec_id(pid, &c->exe_ino, &c->start_code);
	c->fam = f;
	/* The root's map at once (its errors are the capture's); a descendant's at its first sample. */
	if (f->n == 0 && pcap_ready(c) < 0) {
		e = errno;
		pcap_release(c);
		errno = e;
		return NULL;
	}
	if (f->n > 0) {
		/* A descendant's window starts now; the root's when its events are enabled. */
		settle_read_clocks(pid, &c->cpu0, &c->slices0);
		c->proc0_ns = clock_process_cpu_ns(pid);
		c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	}
	f->m[f->n++] = c;
	return c;
}

int pfam_adopt(struct pfam *f)
{
	pid_t pids[CHILDREN_MAX];
	int i, j, n, added = 0;

	f->adopted_ns = clock_mono_ns();
	if (!f->q->children || f->n == 0)
		return 0;
	n = children_list(f->m[0]->pid, pids, CHILDREN_MAX);
	for (i = 0; i < n && f->n <= CHILDREN_MAX; i++) {
		for (j = 0; j < f->n && f->m[j]->pid != pids[i]; j++)
			;
		if (j < f->n)
			continue;
		if (pfam_adopt_one(f, pids[i], NULL, 0))
			added++;
		else if (errno != ENOSPC)
			f->adopt_failures++;
	}
	return added;
}

struct pcap *pfam_find(struct pfam *f, uint32_t pid, uint64_t t)
{
	int i;

	for (i = 0; i < f->n; i++) {
		struct pcap *c = f->m[i];

		if (c->pid == (pid_t)pid && t >= c->since &&
		    !(c->execed && (!c->exec_time || t >= c->exec_time)))
			return c;
	}
	return NULL;
}

int pfam_gone(const struct pcap *c)
{
	struct pollfd p = { .fd = c->pidfd, .events = POLLIN };

	if (c->pidfd < 0)
		return target_exited(c->pid);
	return poll(&p, 1, 0) > 0;
}

void pfam_release(struct pfam *f)
{
	int i;

	perf_events_release(&f->ev);
	for (i = 0; i < f->n; i++)
		pcap_release(f->m[i]);
	f->n = 0;
}
