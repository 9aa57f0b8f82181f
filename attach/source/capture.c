/*
 * capture.c — the skeleton around every source's sampling (capture.h):
 * what each capture does before its first sample and after its last, in
 * one place, so that the ptrace, perf and segment sources hold only their
 * own loops.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/capture/target.h"
#include "attach/source/capture.h"
#include "attach/source/children.h"
#include "common/err.h"
#include "common/exitcode.h"
#include "common/hurry.h"
#include "model/profile.h"

void capture_open(struct capture *cx, const struct capture_req *q, struct capture_report *rep,
		  struct profile **out)
{
	memset(cx, 0, sizeof(*cx));
	memset(rep, 0, sizeof(*rep));
	cx->q = q;
	cx->rep = rep;
	*out = NULL;
}

int capture_profile(struct capture *cx, int64_t period)
{
	if (!cx->prof)
		cx->prof = profile_new();
	if (!cx->prof || capture_declare(cx->q, cx->prof, period) < 0) {
		error("out of memory");
		return EXIT_INTERNAL;
	}
	return EXIT_OK;
}

int capture_map_failed(const struct target *t, int e)
{
	if (e == EACCES || e == EPERM || e == ESRCH || e == ENOENT)
		return capture_begin_failed(t, e == ENOENT ? ESRCH : EPERM);
	errno = e;
	error_errno("cannot read the memory map of %d", (int)t->pid);
	return EXIT_INTERNAL;
}

void capture_children_mark(struct capture *cx, pid_t pid)
{
	if (!cx->q->runs_only || cx->q->children || cx->kids)
		return;
	if ((cx->kids = calloc(CHILDREN_MAX, sizeof(*cx->kids))))
		cx->nkids = children_cpu(pid, cx->kids, CHILDREN_MAX);
}

int capture_close(struct capture *cx, pid_t pid, const char *comm, uint64_t cpu_process_ns,
		  struct profile **out)
{
	struct capture_report *rep = cx->rep;

	profile_set_time(cx->prof, (int64_t)rep->start_real_ns, (int64_t)rep->duration_ns);
	rep->cpu_self_s = capture_self_cpu();
	if (cx->kids && cx->nkids >= 0 && !cx->q->quiet && !rep->stop_signal)
		children_note(pid, comm, cx->kids, cx->nkids, cpu_process_ns, rep->duration_ns);
	*out = cx->prof;
	cx->prof = NULL;
	return EXIT_OK;
}

int capture_nice(struct capture *cx, int nice)
{
	int was = hurry_nice();

	hurry_end();
	if (!cx->niced)
		cx->nice_was = was;
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) != 0)
		return -1;
	cx->niced = 1;
	return 0;
}

void capture_nice_end(struct capture *cx)
{
	hurry_end();
	if (cx->niced)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), cx->nice_was);
	cx->niced = 0;
}

void capture_release(struct capture *cx)
{
	capture_nice_end(cx);
	profile_free(cx->prof);
	cx->prof = NULL;
	free(cx->kids);
	cx->kids = NULL;
}
