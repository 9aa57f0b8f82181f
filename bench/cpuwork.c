/*
 * cpuwork — the CPU-bound workload of bench/overhead: -t THREADS threads
 * (default 2) each run -n ROUNDS rounds of work through a 30-deep chain of
 * calls across five functions (a mix of integer and floating-point work at
 * the bottom), built with -O2 and without frame pointers, so a profiler
 * must unwind with DWARF. Prints "ready PID" at start and "elapsed SECONDS"
 * when every thread is done; the elapsed time is what a profiler slows.
 * Then "cpu SECONDS": the process's CPU time over the same span, which a
 * sampler that works in the target's context (perf) adds to, and which the
 * load of other processes on a shared machine does not.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

double level_a(int depth, double x);
double level_b(int depth, double x);
double level_c(int depth, double x);
double level_d(int depth, double x);
double leaf_work(double x);

static long rounds = 4000;
static double (*volatile next_level[4])(int, double) = { level_a, level_b, level_c, level_d };

__attribute__((noinline)) double leaf_work(double x)
{
	double s = 0;
	unsigned i;

	for (i = 0; i < 20000; i++) {
		s += sqrt(x + i) * 1.0000001;
		x = x * 0.999999 + 1.0;
	}
	return s;
}

#define LEVEL(name, k)                                                        \
	__attribute__((noinline)) double name(int depth, double x)            \
	{                                                                     \
		double r;                                                     \
		if (depth == 0)                                               \
			return leaf_work(x);                                  \
		r = next_level[(depth + k) % 4](depth - 1, x + k);            \
		return r * 0.5 + (double)depth;                               \
	}
LEVEL(level_a, 1)
LEVEL(level_b, 2)
LEVEL(level_c, 3)
LEVEL(level_d, 0)

static volatile double sink;

static void *worker(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < rounds; i++)
		sink += level_a(30, (double)i);
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1, c0, c1;
	pthread_t t[64];
	int n = 2, c, i;

	while ((c = getopt(argc, argv, "t:n:")) != -1) {
		if (c == 't')
			n = atoi(optarg);
		else if (c == 'n')
			rounds = atol(optarg);
	}
	if (n < 1 || n > 64)
		return 2;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	/* Give a profiler time to attach before the clock starts. */
	usleep(300000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	for (i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	printf("elapsed %.4f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	printf("cpu %.4f\n", (c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9);
	return 0;
}
