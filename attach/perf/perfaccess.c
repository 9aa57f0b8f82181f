/*
 * perfaccess.c — the perf sampler's permissions (perfaccess.h): the capability
 * bits (capget), kernel.perf_event_paranoid, this process's seccomp mode,
 * and the one-phrase reasons built from them. The kernel's rules
 * (kernel/events/core.c): CPU-wide events need perf_event_paranoid <= 0
 * or CAP_PERFMON/CAP_SYS_ADMIN; kernel-mode samples need <= 1 or the
 * capability; per-task events on a process one may ptrace need <= 2
 * (Debian and Android kernels refuse every unprivileged use at 3).
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/perf/perfaccess.h"
#include "attach/perf/events.h"
#include "common/proc.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif

/* Whether cap is in this thread's effective set. */
static int cap_effective(int cap)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0)
		return 0;
	return !!(d[cap / 32].effective & (1u << (cap % 32)));
}

/* A number from a small /proc file, or dflt. */
static long proc_number(const char *path, long dflt)
{
	char buf[64], *end;
	long v;

	if (proc_read(path, buf, sizeof(buf)) <= 0)
		return dflt;
	v = strtol(buf, &end, 10);
	return end == buf ? dflt : v;
}

/* This process's seccomp mode (0 none, 1 strict, 2 filter), from its status. */
static int seccomp_mode(void)
{
	char buf[4096], *p;

	if (proc_read("/proc/self/status", buf, sizeof(buf)) <= 0 ||
	    !(p = strstr(buf, "\nSeccomp:")))
		return 0;
	return atoi(p + 9);
}

void perf_access_probe(struct perf_access *a)
{
	int cap;

	memset(a, 0, sizeof(*a));
	a->paranoid = (int)proc_number("/proc/sys/kernel/perf_event_paranoid", 99);
	if (a->paranoid == 99 && access("/proc/sys/kernel/perf_event_paranoid", F_OK) < 0) {
		snprintf(a->why, sizeof(a->why), "this kernel has no perf events");
		return;
	}
	cap = cap_effective(CAP_PERFMON) ? CAP_PERFMON : cap_effective(CAP_SYS_ADMIN) ? CAP_SYS_ADMIN : 0;
	if (cap) {
		a->scope = PERF_SCOPE_CPU;
		snprintf(a->why, sizeof(a->why), "CPU-wide events, allowed by %s",
			 geteuid() == 0 ? "root" : cap == CAP_PERFMON ? "CAP_PERFMON" : "CAP_SYS_ADMIN");
		return;
	}
	if (a->paranoid <= 0) {
		a->scope = PERF_SCOPE_CPU;
		snprintf(a->why, sizeof(a->why),
			 "CPU-wide events, allowed by kernel.perf_event_paranoid %d", a->paranoid);
		return;
	}
	/* Per-task events; at 3 only a mainline kernel (which treats it as 2) takes them. */
	a->scope = PERF_SCOPE_TASK;
	a->exclude_kernel = a->paranoid > 1;
	snprintf(a->why, sizeof(a->why), "per-thread events%s, allowed by kernel.perf_event_paranoid %d",
		 a->exclude_kernel ? " (user mode only)" : "", a->paranoid);
}

void perf_access_refusal(const struct perf_access *a, const char *what, int e, char *buf,
			 size_t cap)
{
	if (!a->scope && a->why[0]) {
		snprintf(buf, cap, "%s", a->why);
		return;
	}
	if (what && !strcmp(what, "mmap")) {
		snprintf(buf, cap, "cannot lock memory for the ring buffers (%s): raise "
			 "kernel.perf_event_mlock_kb or ulimit -l", strerror(e));
		return;
	}
	switch (e) {
	case EACCES:
	case EPERM:
		if (seccomp_mode() == 2)
			snprintf(buf, cap, "perf_event_open refused (%s) under a seccomp filter: "
				 "a container's default profile blocks it", strerror(e));
		else
			snprintf(buf, cap, "perf_event_open refused: kernel.perf_event_paranoid is %d "
				 "(set it to %d or less, or give cprof-attach CAP_PERFMON)",
				 a->paranoid, a->paranoid >= 3 ? 2 : 0);
		break;
	case ENOSYS:
		snprintf(buf, cap, "perf_event_open is not available (%s%s)", strerror(e),
			 seccomp_mode() == 2 ? ", under a seccomp filter" : "");
		break;
	case EMFILE:
	case ENFILE:
		snprintf(buf, cap, "too many descriptors for one perf event per thread and CPU "
			 "(ulimit -n)");
		break;
	case ESRCH:
		snprintf(buf, cap, "the target went away while its events were opened");
		break;
	default:
		snprintf(buf, cap, "%s failed: %s", what ? what : "perf_event_open", strerror(e));
		break;
	}
}
