/*
 * target.c — pre-flight checks from /proc/PID/status, so that the common
 * refusals get a precise message (who traces the target, whose process it
 * is) instead of the bare EPERM that ptrace gives for all of them.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach/capture/permission.h"
#include "attach/capture/target.h"
#include "common/err.h"
#include "common/exitcode.h"
#include "common/proc.h"

/*
 * Is tid one of our own threads? TracerPid names the tracing thread, and
 * ours is the sampler thread, not the main one: while it holds a thread
 * of the target (one that is exiting, say), that thread's TracerPid is
 * the sampler's tid.
 */
static int own_thread(pid_t tid)
{
	char p[64];

	if (tid == getpid())
		return 1;
	snprintf(p, sizeof(p), "/proc/self/task/%d", (int)tid);
	return access(p, F_OK) == 0;
}

/* The value of "Key:\t..." in status text, copied into out. */
static int status_field(const char *text, const char *key, char *out, size_t cap)
{
	size_t klen = strlen(key), n;
	const char *p = text, *e;

	while (p && *p) {
		if (!strncmp(p, key, klen) && p[klen] == ':') {
			p += klen + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			e = strchr(p, '\n');
			n = e ? (size_t)(e - p) : strlen(p);
			if (n >= cap)
				n = cap - 1;
			memcpy(out, p, n);
			out[n] = 0;
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

static void read_comm(pid_t pid, char *out, size_t cap)
{
	char p[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
	n = proc_read(p, out, cap);
	if (n <= 0) {
		snprintf(out, cap, "?");
		return;
	}
	if (out[n - 1] == '\n')
		out[n - 1] = 0;
}

#define PF_KTHREAD_FLAG 0x00200000u /* include/linux/sched.h: PF_KTHREAD */

/*
 * Whether pid is a kernel thread: "Kthread: 1" in its status (Linux 6.0
 * and later), else PF_KTHREAD in its stat's flags (the 9th field).
 */
static int kernel_thread(pid_t pid, const char *status)
{
	char v[16], p[64], stat[1024], *c;
	unsigned long flags;
	int i;

	if (status_field(status, "Kthread", v, sizeof(v)) == 0)
		return v[0] == '1';
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	if (proc_read(p, stat, sizeof(stat)) <= 0 || !(c = strrchr(stat, ')')))
		return 0;
	for (i = 0; i < 7 && c; i++)
		c = strchr(c + 1, ' ');
	if (!c)
		return 0;
	flags = strtoul(c + 1, NULL, 10);
	return !!(flags & PF_KTHREAD_FLAG);
}

static int target_read(struct target *t, pid_t pid, pid_t *tgid)
{
	char text[4096], v[64], p[64];

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	if (proc_read(p, text, sizeof(text)) < 0)
		return -1;
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	if (status_field(text, "Name", t->comm, sizeof(t->comm)) < 0)
		snprintf(t->comm, sizeof(t->comm), "?");
	t->state = status_field(text, "State", v, sizeof(v)) == 0 ? v[0] : '?';
	*tgid = status_field(text, "Tgid", v, sizeof(v)) == 0 ? (pid_t)atoi(v) : pid;
	t->tracer = status_field(text, "TracerPid", v, sizeof(v)) == 0 ? (pid_t)atoi(v) : 0;
	t->uid = status_field(text, "Uid", v, sizeof(v)) == 0 ? (uid_t)strtoul(v, NULL, 10) : 0;
	t->kthread = kernel_thread(pid, text);
	return 0;
}

int target_check(struct target *t, pid_t pid)
{
	char tracer[17];
	pid_t tgid;

	if (target_read(t, pid, &tgid) < 0) {
		if (errno == ENOENT || errno == ESRCH)
			return error("cannot attach to %d: no such process", (int)pid);
		return error_errno("cannot attach to %d: cannot read /proc/%d/status", (int)pid,
				   (int)pid);
	}
	if (tgid > 0 && tgid != pid) {
		note("%d is a thread of process %d: profiling the whole process", (int)pid,
		     (int)tgid);
		if (target_read(t, tgid, &tgid) < 0)
			return error("cannot attach to %d: no such process", (int)tgid);
	}
	if (t->pid == getpid())
		return error("cannot attach to %d: that is cprof-attach itself", (int)t->pid);
	if (t->state == 'Z' || t->state == 'X')
		return error("cannot attach to %d (%s): the process is a zombie (it has exited "
			     "and waits for its parent to reap it)",
			     (int)t->pid, t->comm);
	if (t->kthread)
		return error("cannot attach to %d (%s): a kernel thread has no user stack to "
			     "profile (its kernel stack: cat /proc/%d/stack)",
			     (int)t->pid, t->comm, (int)t->pid);
	if (t->tracer == getpid())
		return error("cannot attach to %d (%s): cprof-attach already traces it",
			     (int)t->pid, t->comm);
	if (t->tracer) {
		read_comm(t->tracer, tracer, sizeof(tracer));
		return error("cannot attach to %d (%s): already traced by pid %d (%s)",
			     (int)t->pid, t->comm, (int)t->tracer, tracer);
	}
	return 0;
}

int target_attach_error(const struct target *t, int e)
{
	struct target now;
	char tracer[17], why[256];
	pid_t tgid;

	if (e == ESRCH)
		return error("cannot attach to %d (%s): the process exited", (int)t->pid, t->comm);
	if (e == EPERM || e == EACCES) {
		/* Someone may have attached since the check. */
		if (target_read(&now, t->pid, &tgid) == 0 && now.tracer && !own_thread(now.tracer)) {
			read_comm(now.tracer, tracer, sizeof(tracer));
			return error("cannot attach to %d (%s): already traced by pid %d (%s)",
				     (int)t->pid, t->comm, (int)now.tracer, tracer);
		}
		permission_why(t->pid, t->uid, why, sizeof(why));
		return error("cannot attach to %d (%s): not permitted: %s", (int)t->pid, t->comm,
			     why);
	}
	errno = e;
	return error_errno("cannot attach to %d (%s)", (int)t->pid, t->comm);
}

void target_lost_access(const struct target *t)
{
	struct target now;
	char tracer[17];
	pid_t tgid;

	if (target_read(&now, t->pid, &tgid) == 0 && now.tracer && !own_thread(now.tracer)) {
		read_comm(now.tracer, tracer, sizeof(tracer));
		warning("pid %d (%s) began tracing %d (%s) mid-capture; stopped there, the profile "
			"holds what was collected",
			(int)now.tracer, tracer, (int)t->pid, t->comm);
		return;
	}
	warning("%d (%s) may no longer be traced (its credentials changed or it became "
		"non-dumpable); stopped there, the profile holds what was collected",
		(int)t->pid, t->comm);
}

int target_traced_by_other(pid_t pid)
{
	struct target now;
	pid_t tgid;

	return target_read(&now, pid, &tgid) == 0 && now.tracer && !own_thread(now.tracer);
}

int target_exited(pid_t pid)
{
	struct target now;
	pid_t tgid;

	return target_read(&now, pid, &tgid) < 0 || now.state == 'Z' || now.state == 'X';
}

int target_exec_id(pid_t pid, uint64_t *ino, uint64_t *start_code)
{
	char p[64], buf[1024], *q;
	struct stat st;
	int field;

	snprintf(p, sizeof(p), "/proc/%d/exe", (int)pid);
	if (stat(p, &st) < 0)
		return -1;
	*ino = st.st_ino;
	*start_code = 0;
	/*
	 * The leader's own stat, not the process's: the same startcode (the
	 * mm's), without summing every thread's times and faults, which on
	 * thousands of threads makes each read many times dearer; the perf
	 * sampler asks ten times a second.
	 */
	snprintf(p, sizeof(p), "/proc/%d/task/%d/stat", (int)pid, (int)pid);
	if (proc_read(p, buf, sizeof(buf)) <= 0 || !(q = strrchr(buf, ')')))
		return 0;
	/* Field 26 (startcode); the comm in field 2 may hold spaces, so count after ')'. */
	for (field = 2; field < 26 && q; field++)
		q = strchr(q + 1, ' ');
	if (q)
		*start_code = strtoull(q + 1, NULL, 10);
	return 0;
}

int target_secure_exec(pid_t pid)
{
	uint64_t v[512]; /* the auxiliary vector is a few dozen pairs; more is not read */
	char p[64];
	ssize_t n;
	size_t i;

	snprintf(p, sizeof(p), "/proc/%d/auxv", (int)pid);
	n = proc_read(p, (char *)v, sizeof(v));
	if (n < (ssize_t)(2 * sizeof(v[0])))
		return -1;
	for (i = 0; i + 1 < (size_t)n / sizeof(v[0]) && v[i] != AT_NULL; i += 2)
		if (v[i] == AT_SECURE)
			return v[i + 1] != 0;
	return 0;
}

void target_say_capture(pid_t pid, const char *comm, int children, const char *what,
			uint64_t duration_ns, uint64_t period_ns, const char *how)
{
	char hz[32] = "", len[32];

	/* A source on events, not a clock, has no rate to say. */
	if (period_ns)
		snprintf(hz, sizeof(hz), " at %.0f Hz", 1e9 / (double)period_ns);
	/* The longest window -d takes (a week) is run's "to the end" (attach/cli/run.c). */
	if (duration_ns >= TARGET_WINDOW_MAX_NS)
		snprintf(len, sizeof(len), "until it exits");
	else
		snprintf(len, sizeof(len), "for %.3gs", (double)duration_ns / 1e9);
	note("profiling %d (%s)%s: %s %s%s%s%s", (int)pid, comm,
	     children ? " and its descendants" : "", what, len, hz, how ? "; " : "",
	     how ? how : "");
}

int target_gone_before(pid_t pid, const char *comm)
{
	error("%d (%s) exited before anything was captured; no profile written", (int)pid, comm);
	return EXIT_GONE;
}
