/*
 * stacks — a test target whose hot code sits where unwinders fail: under a
 * qsort comparator (frames inside libc), in a signal handler (a signal
 * frame), 100 frames deep in recursion, and on the main thread. Built with
 * -O2 and without frame pointers, so only DWARF CFI unwinds it.
 *
 * Threads: "qsorter" sorts with cmp_slow(); "signaller" spins in
 * signal_victim() and a wall-clock timer interrupts it every 4 ms
 * with SIGUSR1, whose handler spins in handler_spin(); "recurser" calls
 * recurse() 100 deep and spins in recurse_bottom(); "deep" recurses 700
 * deep (past cprof's 512-frame limit) and spins in deep_bottom(); main
 * spins in main_spin().
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEPTH 100

int cmp_slow(const void *a, const void *b);
void qsort_worker(void);
void signal_victim(void);
void handler_spin(void);
int recurse(int n);
int recurse_bottom(void);
int deep(int n);
int deep_bottom(void);
void main_spin(void);

static volatile unsigned long sink;
static int (*volatile recurse_ptr)(int) = recurse;
static int (*volatile deep_ptr)(int) = deep;

static void burn(unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) int cmp_slow(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	burn(200);
	return (x > y) - (x < y);
}

__attribute__((noinline)) void qsort_worker(void)
{
	int v[4096];
	unsigned i, seed = 1;

	for (;;) {
		for (i = 0; i < 4096; i++) {
			seed = seed * 1103515245u + 12345u;
			v[i] = (int)(seed >> 8);
		}
		qsort(v, 4096, sizeof(v[0]), cmp_slow);
	}
}

__attribute__((noinline)) void handler_spin(void)
{
	burn(400000);
}

static void on_usr1(int sig)
{
	(void)sig;
	handler_spin();
}

__attribute__((noinline)) void signal_victim(void)
{
	for (;;)
		burn(1000);
}

__attribute__((noinline)) int recurse_bottom(void)
{
	burn(2000000);
	return 1;
}

__attribute__((noinline)) int recurse(int n)
{
	int r;

	if (n <= 1)
		r = recurse_bottom();
	else
		r = recurse_ptr(n - 1);
	sink += (unsigned long)n;
	return r + 1;
}

__attribute__((noinline)) int deep_bottom(void)
{
	burn(2000000);
	return 1;
}

__attribute__((noinline)) int deep(int n)
{
	int r = n <= 1 ? deep_bottom() : deep_ptr(n - 1);

	sink += (unsigned long)n;
	return r + 1;
}

static void *deep_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "deep");
	for (;;)
		deep_ptr(700);
	return NULL;
}

__attribute__((noinline)) void main_spin(void)
{
	for (;;)
		burn(1000);
}

static void *qsorter_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "qsorter");
	qsort_worker();
	return NULL;
}

static void *signaller_main(void *arg)
{
	struct sigevent sev;
	struct itimerspec its;
	timer_t timer;

	(void)arg;
	pthread_setname_np(pthread_self(), "signaller");
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev._sigev_un._tid = gettid();
	memset(&its, 0, sizeof(its));
	its.it_value.tv_nsec = 4000000;
	its.it_interval.tv_nsec = 4000000;
	/*
	 * Without its timer this thread would test nothing: say so, loudly.
	 * A wall-clock timer: a CPU-time one expires at a scheduler tick, so
	 * the handler always began just after one and ended before the next,
	 * and where a ptrace stop lands only at the next kernel entry (a PVM
	 * guest) no stop ever landed in it (0 handler samples in a CI run).
	 */
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0 ||
	    timer_settime(timer, 0, &its, NULL) != 0) {
		perror("stacks: signaller timer");
		exit(1);
	}
	signal_victim();
	return NULL;
}

static void *recurser_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "recurser");
	for (;;)
		recurse_ptr(DEPTH);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	pthread_t t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	if (pthread_create(&t, NULL, qsorter_main, NULL) ||
	    pthread_create(&t, NULL, signaller_main, NULL) ||
	    pthread_create(&t, NULL, recurser_main, NULL) ||
	    pthread_create(&t, NULL, deep_main, NULL)) {
		perror("pthread_create");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	main_spin();
	return 0;
}
