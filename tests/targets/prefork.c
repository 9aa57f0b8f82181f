/*
 * prefork — a test target shaped like a pre-forking server (nginx's
 * master, PostgreSQL's postmaster): a master that forks W workers
 * (default 2) that do the work, each spinning in worker_work() about half
 * of the time, and sleeping in worker_wait() for the rest. Worker 1
 * exits after about 1.5 s and the master forks a replacement, as a server
 * replaces a worker, so a capture sees a process born during it. The
 * master itself spins in master_work() about 5 ms every 100 ms, unless
 * started with -q (a master that uses no CPU at all).
 *
 * With -m KB (for heap profiles), the master holds KB KiB allocated in
 * master_hold() before it forks, which every worker inherits, and worker N
 * holds (N+1) * KB KiB of its own, allocated in worker_hold(), in 4 KiB
 * blocks.
 *
 * Prints "worker N PID" for each worker it forks and "ready PID" once the
 * first workers run. Workers die with the master (PR_SET_PDEATHSIG).
 *
 * Usage: prefork [-q] [-m KB] [W]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void worker_work(double ms);
void worker_wait(double ms);
void master_work(double ms);
void *master_hold(long kb);
void *worker_hold(long kb);

static volatile unsigned long sink;
static long hold_kb;
static void *volatile held;

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) static void spin(double ms)
{
	double end = cpu_ms() + ms;
	unsigned i;

	while (cpu_ms() < end)
		for (i = 0; i < 20000; i++)
			sink += i;
}

__attribute__((noinline)) void worker_work(double ms)
{
	spin(ms);
	sink++; /* not a tail call: worker_work stays on the stack */
}

__attribute__((noinline)) void master_work(double ms)
{
	spin(ms);
	sink++;
}

__attribute__((noinline)) void worker_wait(double ms)
{
	struct timespec ts = { 0, (long)(ms * 1e6) };

	nanosleep(&ts, NULL);
}

/* Allocate kb KiB in 4 KiB blocks, kept in a list (the first word of each block). */
static void *hold(long kb)
{
	void *head = NULL, *b;
	long i;

	for (i = 0; i < kb / 4; i++) {
		if (!(b = malloc(4096)))
			break;
		memset(b, 1, 4096);
		*(void **)b = head;
		head = b;
	}
	return head;
}

__attribute__((noinline)) void *master_hold(long kb)
{
	void *p = hold(kb);

	sink++;
	return p;
}

__attribute__((noinline)) void *worker_hold(long kb)
{
	void *p = hold(kb);

	sink++;
	return p;
}

static pid_t fork_worker(int n, pid_t master, double life_s)
{
	pid_t pid = fork();
	double start;

	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != master)
		_exit(0);
	start = (double)time(NULL);
	if (hold_kb)
		held = worker_hold((n + 1) * hold_kb);
	printf("worker %d %d\n", n, (int)getpid());
	fflush(stdout);
	for (;;) {
		worker_work(20);
		worker_wait(20);
		if (life_s > 0 && (double)time(NULL) - start >= life_s)
			_exit(0);
	}
}

int main(int argc, char **argv)
{
	int quiet = 0, w = 2, i;
	pid_t master = getpid(), p;
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	if (argc > 1 && !strcmp(argv[1], "-q")) {
		quiet = 1;
		argc--;
		argv++;
	}
	if (argc > 2 && !strcmp(argv[1], "-m")) {
		hold_kb = atol(argv[2]);
		argc -= 2;
		argv += 2;
	}
	if (argc > 1)
		w = atoi(argv[1]);
	if (w < 1 || w > 32) {
		fprintf(stderr, "usage: prefork [-q] [-m KB] [W]\n");
		return 2;
	}
	if (hold_kb)
		held = master_hold(hold_kb);
	for (i = 0; i < w; i++)
		fork_worker(i, master, i == 1 ? 1.5 : 0);
	printf("ready %d\n", (int)master);
	fflush(stdout);
	for (;;) {
		if (!quiet)
			master_work(5);
		nanosleep(&ts, NULL);
		/* A worker that exited is replaced, as a server does. */
		while ((p = waitpid(-1, NULL, WNOHANG)) > 0)
			fork_worker(w++, master, 0);
	}
}
