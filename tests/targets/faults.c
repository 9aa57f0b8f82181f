/*
 * faults — a test target that misbehaves in one way while it is profiled,
 * chosen by the first argument (MS in milliseconds after start):
 *
 *   exec MS     replace itself with /bin/sleep 60 after MS
 *   undump MS   make itself non-dumpable (prctl) after MS, which takes away
 *               an unprivileged profiler's right to trace it
 *   fork        fork children that exit at once, as fast as it can
 *   churn       create and join threads all the time, each spinning ~1 ms
 *
 * A "worker" thread spins in fault_work() throughout. Prints "ready PID",
 * then "tick ROUNDS" every 50 ms.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void fault_work(void);
void churn_body(void);

static atomic_ulong rounds;
static volatile unsigned long sink;

__attribute__((noinline)) void fault_work(void)
{
	for (;;) {
		for (unsigned i = 0; i < 100000; i++)
			sink += i;
		atomic_fetch_add(&rounds, 1);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker");
	fault_work();
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void churn_body(void)
{
	double end = now_ms() + 1;

	while (now_ms() < end)
		sink++;
}

static void *churner(void *arg)
{
	(void)arg;
	churn_body();
	return NULL;
}

static void *churn_loop(void *arg)
{
	pthread_t t[4];
	int i;

	(void)arg;
	for (;;) {
		for (i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, churner, NULL);
		for (i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	return NULL;
}

static void *fork_loop(void *arg)
{
	(void)arg;
	for (;;) {
		pid_t c = fork();

		if (c == 0)
			_exit(0);
		if (c > 0)
			waitpid(c, NULL, 0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	double start = now_ms(), at = argc > 2 ? atof(argv[2]) : 0;
	const char *mode = argc > 1 ? argv[1] : "";
	pthread_t t;
	int done = 0;

	pthread_create(&t, NULL, worker, NULL);
	if (!strcmp(mode, "churn"))
		pthread_create(&t, NULL, churn_loop, NULL);
	if (!strcmp(mode, "fork"))
		pthread_create(&t, NULL, fork_loop, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		nanosleep(&ts, NULL);
		printf("tick %lu\n", atomic_load(&rounds));
		fflush(stdout);
		if (done || now_ms() - start < at)
			continue;
		if (!strcmp(mode, "exec")) {
			execl("/bin/sleep", "sleep", "60", (char *)NULL);
			return 1;
		}
		if (!strcmp(mode, "undump")) {
			prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
			printf("undumped\n");
			fflush(stdout);
			done = 1;
		}
	}
}
