/*
 * ptracefloor — the raw cost of a ptrace sample, for bench/overhead: it
 * seizes every thread of PID and, HZ times a second, for each thread in
 * state R does exactly PTRACE_INTERRUPT, waitpid, PTRACE_GETREGS, one
 * process_vm_readv of up to 64 KiB of stack, PTRACE_CONT — no unwinding,
 * no symbols, no profile. It prints the pause (interrupt to resume)
 * percentiles and its own CPU time when the target exits or after
 * SECONDS. Usage: ptracefloor PID HZ SECONDS [STACK_BYTES (default 65536)]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXT 4096
#define MAXP 1000000

static unsigned long long now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

static char state_of(int pid, int tid)
{
	char p[64], buf[512], *q;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(p, "r");
	if (!f)
		return 0;
	q = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return q && q[1] ? q[2] : 0;
}

static void on_alarm(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it = { { 1, 0 }, { 1, 0 } };
	static unsigned long long pause_ns[MAXP];
	static unsigned char stack[65536];
	int tids[MAXT], n = 0, pid, hz, i, st;
	size_t copy;
	unsigned long long end, next, t0, np = 0;
	struct user_regs_struct r;
	struct rusage ru;
	struct dirent *d;
	char p[64];
	DIR *dir;

	if (argc != 4 && argc != 5)
		return 2;
	copy = argc == 5 ? (size_t)atol(argv[4]) : sizeof(stack);
	if (copy > sizeof(stack))
		copy = sizeof(stack);
	pid = atoi(argv[1]);
	hz = atoi(argv[2]);
	/*
	 * A waitpid for an interrupted thread can block for good when the
	 * process exits meanwhile (its leader is not reported before the other
	 * threads are reaped, by us): a once-a-second alarm, without
	 * SA_RESTART, breaks it with EINTR at no cost per stop.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	end = now() + (unsigned long long)(atof(argv[3]) * 1e9);
	snprintf(p, sizeof(p), "/proc/%d/task", pid);
	dir = opendir(p);
	if (!dir)
		return 1;
	while ((d = readdir(dir)) && n < MAXT)
		if (atoi(d->d_name) > 0 &&
		    ptrace(PTRACE_SEIZE, atoi(d->d_name), 0, (void *)PTRACE_O_TRACECLONE) == 0)
			tids[n++] = atoi(d->d_name);
	closedir(dir);
	for (next = now(); now() < end && kill(pid, 0) == 0 && state_of(pid, pid) != 'Z';) {
		/* New threads: their first stop, and clone events, let through. */
		while ((i = waitpid(-1, &st, __WALL | WNOHANG)) > 0) {
			if (WIFSTOPPED(st)) {
				if ((st >> 16) == PTRACE_EVENT_CLONE) {
					unsigned long msg;

					if (ptrace(PTRACE_GETEVENTMSG, i, 0, &msg) == 0 && n < MAXT)
						tids[n++] = (int)msg;
				}
				ptrace(PTRACE_CONT, i, 0,
				       (st >> 16) ? 0 : (void *)(long)(WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st)));
			}
		}
		next += 1000000000ull / hz;
		while (now() < next)
			usleep((useconds_t)((next - now()) / 1000));
		for (i = 0; i < n; i++) {
			struct iovec l = { stack, copy }, rv;

			if (state_of(pid, tids[i]) != 'R')
				continue;
			t0 = now();
			if (ptrace(PTRACE_INTERRUPT, tids[i], 0, 0) < 0)
				continue;
			if (waitpid(tids[i], &st, __WALL) != tids[i] || !WIFSTOPPED(st))
				continue;
			ptrace(PTRACE_GETREGS, tids[i], 0, &r);
			rv.iov_base = (void *)r.rsp;
			rv.iov_len = copy;
			process_vm_readv(pid, &l, 1, &rv, 1, 0);
			ptrace(PTRACE_CONT, tids[i], 0, 0);
			if (np < MAXP)
				pause_ns[np++] = now() - t0;
		}
	}
	getrusage(RUSAGE_SELF, &ru);
	qsort(pause_ns, np, sizeof(pause_ns[0]), cmp);
	printf("floor: %llu stops, pause p50 %.1fus p99 %.1fus max %.1fus, own CPU %.3fs\n", np,
	       np ? pause_ns[np / 2] / 1e3 : 0, np ? pause_ns[np * 99 / 100] / 1e3 : 0,
	       np ? pause_ns[np - 1] / 1e3 : 0,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		       ru.ru_stime.tv_usec / 1e6);
	return 0;
}
