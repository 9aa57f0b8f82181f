/*
 * burst — a test target whose "burst" thread works about WORK_US of CPU in
 * burst_work() and sleeps WAIT_US in clock_nanosleep, thousands of times a
 * second, beside BUSY threads that spin all the time (so that the burst
 * thread, woken, waits for a CPU). burst_work() is a fixed number of loop
 * iterations, calibrated at start: no clock read and no system call
 * inside it (on a PVM guest the vDSO clock is a system call, and a ptrace
 * stop lands at the next one). The thread measures its CPU in
 * burst_work() itself (CLOCK_THREAD_CPUTIME_ID around it), and prints, on
 * each SIGUSR1 (and at start, as "ready"):
 *   burst TID WORK_NS MONO_NS
 * the CPU it spent in burst_work() so far, and CLOCK_MONOTONIC then, so a
 * test can compare rates over its own window.
 *
 * Usage: burst [WORK_US [WAIT_US [BUSY]]]   (defaults 50 200 2)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void burst_work(unsigned long iters);
void busy_spin(void);

static volatile unsigned long sink;
static volatile long long work_ns;
static volatile pid_t burst_tid;
static volatile sig_atomic_t report;
static unsigned long iters;
static int wait_us = 200;

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

__attribute__((noinline)) void burst_work(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) void busy_spin(void)
{
	for (;;)
		burst_work(100000);
}

static void *burst_main(void *arg)
{
	struct timespec ts = { 0, wait_us * 1000l };
	long long a;

	(void)arg;
	pthread_setname_np(pthread_self(), "burst");
	burst_tid = (pid_t)syscall(SYS_gettid);
	for (;;) {
		a = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		burst_work(iters);
		work_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - a;
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	}
	return NULL;
}

static void *busy_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "busy");
	busy_spin();
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	report = 1;
}

static void print_burst(const char *head)
{
	if (head)
		printf("%s %d\n", head, (int)getpid());
	printf("burst %d %lld %lld\n", (int)burst_tid, work_ns, clock_ns(CLOCK_MONOTONIC));
	printf("end\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int work_us = argc > 1 ? atoi(argv[1]) : 50, nbusy = argc > 3 ? atoi(argv[3]) : 2, i;
	long long t0, t1;
	sigset_t usr1;
	pthread_t t;

	if (argc > 2)
		wait_us = atoi(argv[2]);
	if (work_us < 1 || wait_us < 1 || wait_us > 999999 || nbusy < 0 || nbusy > 64) {
		fprintf(stderr, "usage: burst [WORK_US [WAIT_US [BUSY]]]\n");
		return 2;
	}
	/* Calibrate: the best of a few runs of 1e6 iterations, on this thread's clock. */
	for (i = 0; i < 5; i++) {
		long long best;

		t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		burst_work(1000000);
		t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		best = t1 - t0 > 0 ? t1 - t0 : 1;
		if (!iters || 1000000ul * 1000ul * (unsigned long)work_us / (unsigned long)best > iters)
			iters = 1000000ul * 1000ul * (unsigned long)work_us / (unsigned long)best;
	}
	signal(SIGUSR1, on_usr1);
	/* Only the main thread takes SIGUSR1: the burst thread's sleeps stay whole. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	if (pthread_create(&t, NULL, burst_main, NULL))
		return 1;
	for (i = 0; i < nbusy; i++)
		if (pthread_create(&t, NULL, busy_main, NULL))
			return 1;
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	while (!burst_tid)
		usleep(1000);
	print_burst("ready");
	for (;;) {
		pause();
		if (report) {
			report = 0;
			print_burst(NULL);
		}
	}
}
