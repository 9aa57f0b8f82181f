/*
 * permission.c — the cause of a refused attach (permission.h), read from
 * /proc and /proc/sys; every read is of our own or the kernel's files,
 * bounded, and a file that cannot be read makes its cause unknown, never
 * assumed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach/capture/permission.h"
#include "common/proc.h"

#define CAP_SYS_PTRACE_BIT 19

/* The value after "Key:" in /proc/self/status, or NULL. */
static const char *self_status(const char *key, char *text, size_t cap)
{
	size_t n = strlen(key);
	char *p;

	if (proc_read("/proc/self/status", text, cap) <= 0)
		return NULL;
	for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ':')
			return p + n + 1 + strspn(p + n + 1, " \t");
	return NULL;
}

static int have_ptrace_cap(void)
{
	char text[4096];
	const char *v = self_status("CapEff", text, sizeof(text));

	return v && ((strtoull(v, NULL, 16) >> CAP_SYS_PTRACE_BIT) & 1);
}

/*
 * The target's permitted capabilities that ours do not hold: without
 * CAP_SYS_PTRACE a tracer's must include them (the kernel's
 * cap_ptrace_access_check), so root without it cannot trace root's
 * processes. 0 when none, or unknown.
 */
static unsigned long long caps_beyond_ours(pid_t pid)
{
	char p[64], text[4096], mine[4096];
	const char *t, *m;
	size_t n;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	if (proc_read(p, text, sizeof(text)) <= 0 || !(t = strstr(text, "\nCapPrm:")) ||
	    !(m = self_status("CapPrm", mine, sizeof(mine))))
		return 0;
	t += 8;
	n = strspn(t, " \t");
	return strtoull(t + n, NULL, 16) & ~strtoull(m, NULL, 16);
}

/* Yama's ptrace_scope, or -1 when Yama is not there. */
static int yama_scope(void)
{
	char v[16];

	if (proc_read("/proc/sys/kernel/yama/ptrace_scope", v, sizeof(v)) <= 0)
		return -1;
	return atoi(v);
}

/* 1 when pid's user namespace is another than ours, 0 when the same, -1 unknown. */
static int other_userns(pid_t pid)
{
	char p[64], a[64], b[64];
	ssize_t na, nb;

	snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)pid);
	na = readlink(p, a, sizeof(a) - 1);
	nb = readlink("/proc/self/ns/user", b, sizeof(b) - 1);
	if (na <= 0 || nb <= 0)
		return -1;
	return na != nb || memcmp(a, b, (size_t)na) != 0;
}

/*
 * A process that is not dumpable (setuid, or prctl(PR_SET_DUMPABLE, 0))
 * has its /proc/PID owned by root whoever runs it.
 */
static int not_dumpable(pid_t pid, uid_t uid)
{
	char p[64];
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%d", (int)pid);
	return uid != 0 && stat(p, &st) == 0 && st.st_uid == 0;
}

void permission_why(pid_t pid, uid_t uid, char *buf, size_t cap)
{
	char text[4096];
	const char *v;
	int cap_ok = have_ptrace_cap(), scope = yama_scope();
	unsigned long long more;

	if (!cap_ok && uid != getuid())
		snprintf(buf, cap, "it belongs to uid %u; run as that user or with "
			 "CAP_SYS_PTRACE", (unsigned)uid);
	else if (scope == 3)
		snprintf(buf, cap, "Yama's kernel.yama.ptrace_scope is 3: no process may be "
			 "traced until the next boot");
	else if (scope == 2 && !cap_ok)
		snprintf(buf, cap, "Yama's kernel.yama.ptrace_scope is 2: only a holder of "
			 "CAP_SYS_PTRACE may trace");
	else if (scope == 1 && !cap_ok)
		snprintf(buf, cap, "Yama's kernel.yama.ptrace_scope is 1: only a process's "
			 "ancestors may trace it; run with CAP_SYS_PTRACE, or set it to 0");
	else if (!cap_ok && (more = caps_beyond_ours(pid)))
		snprintf(buf, cap, "it holds capabilities cprof-attach lacks (%llx beyond ours): "
			 "run with CAP_SYS_PTRACE or with its capabilities", more);
	else if (!cap_ok && not_dumpable(pid, uid))
		snprintf(buf, cap, "the process is not dumpable (a set-user-ID program, or "
			 "prctl PR_SET_DUMPABLE 0): only CAP_SYS_PTRACE may trace it");
	else if (other_userns(pid) == 1)
		snprintf(buf, cap, "it is in another user namespace, where cprof-attach has no "
			 "CAP_SYS_PTRACE; run it from that namespace");
	else if ((v = self_status("Seccomp", text, sizeof(text))) && v[0] == '2')
		snprintf(buf, cap, "cprof-attach runs under a seccomp filter, which may refuse "
			 "ptrace and process_vm_readv");
	else
		snprintf(buf, cap, "none of the usual causes applies (owner: %s; Yama: %s; "
			 "CAP_SYS_PTRACE: %s; no seccomp filter): a security module (AppArmor, "
			 "SELinux) or the process's own protection refuses it",
			 uid == getuid() ? "us" : "another user", scope < 0 ? "not loaded" : "allows it",
			 cap_ok ? "held" : "not needed");
}
