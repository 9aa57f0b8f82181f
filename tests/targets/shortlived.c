/*
 * shortlived — a test target shaped like a thread-per-request server: the
 * main thread creates and joins RATE threads a second, each of which
 * burns about BURN_US of its own CPU in short_burn() and exits; a
 * long-lived "steady" thread spins in steady_spin() all the time, so that
 * the short threads' share is a fraction of the process's CPU, not all of
 * it. Each short thread measures its own CPU with CLOCK_THREAD_CPUTIME_ID
 * just before it returns and adds it to a counter, so a test can take the
 * truth over exactly its own window: on each SIGUSR1 (and at start, as
 * "ready") the target prints
 *   short THREADS SHORT_CPU_NS PROCESS_CPU_NS
 * (threads created so far, the CPU they used, the process's CPU clock,
 * dead threads included), then "end".
 *
 * Usage: shortlived [RATE [BURN_US [STEADY]]]   (defaults 500 300 1)
 *
 * The gaps between creations are drawn uniformly from 0.5 to 1.5 times
 * the mean, as requests arrive: a fixed 2 ms grid locks its phase to a
 * 100 Hz sampling clock (measured: the short threads got 61% of one CPU's
 * ticks for 15% of its time), which tests the sampling clock's aliasing
 * rather than its view of short threads.
 *
 * Built -O2, no frame pointers, like the other targets.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void short_burn(long ns);
void steady_spin(void);

static volatile unsigned long sink;
static volatile sig_atomic_t report;
static long long short_cpu_ns, threads_made;
static int rate = 500, burn_us = 300, nsteady = 1;

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

__attribute__((noinline)) void short_burn(long ns)
{
	long long end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	unsigned i;

	do
		for (i = 0; i < 500; i++)
			sink += i;
	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end);
}

__attribute__((noinline)) void steady_spin(void)
{
	unsigned i;

	for (;;)
		for (i = 0; i < 100000; i++)
			sink += i;
}

static void *short_main(void *arg)
{
	(void)arg;
	short_burn(burn_us * 1000l);
	__atomic_add_fetch(&short_cpu_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID), __ATOMIC_RELAXED);
	return NULL;
}

static void *steady_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "steady");
	steady_spin();
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	report = 1;
}

static void print_counts(const char *head)
{
	if (head)
		printf("%s %d\n", head, (int)getpid());
	printf("short %lld %lld %lld\n", threads_made,
	       __atomic_load_n(&short_cpu_ns, __ATOMIC_RELAXED),
	       clock_ns(CLOCK_PROCESS_CPUTIME_ID));
	printf("end\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct timespec next;
	long long step;
	pthread_t t;
	int i;

	if (argc > 1)
		rate = atoi(argv[1]);
	if (argc > 2)
		burn_us = atoi(argv[2]);
	if (argc > 3)
		nsteady = atoi(argv[3]);
	if (rate < 1 || rate > 100000 || burn_us < 1 || burn_us > 1000000 || nsteady < 0 ||
	    nsteady > 64) {
		fprintf(stderr, "usage: shortlived [RATE [BURN_US [STEADY]]]\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	for (i = 0; i < nsteady; i++)
		if (pthread_create(&t, NULL, steady_main, NULL)) {
			perror("pthread_create");
			return 1;
		}
	print_counts("ready");
	step = 1000000000ll / rate;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		if (pthread_create(&t, NULL, short_main, NULL) == 0) {
			pthread_join(t, NULL);
			threads_made++;
		}
		if (report) {
			report = 0;
			print_counts(NULL);
		}
		/* A late start is taken at once, not made up for. */
		next.tv_nsec += step / 2 + (long long)(drand48() * (double)step);
		while (next.tv_nsec >= 1000000000l) {
			next.tv_nsec -= 1000000000l;
			next.tv_sec++;
		}
		if (clock_ns(CLOCK_MONOTONIC) > next.tv_sec * 1000000000ll + next.tv_nsec)
			clock_gettime(CLOCK_MONOTONIC, &next);
		else
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
}
