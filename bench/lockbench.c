/*
 * lockbench.c — a lock-heavy multi-threaded workload for measuring what
 * libcprof.so's lock interposition costs a program. Each of T threads
 * (default 4) performs N (default 2,000,000) iterations: take its own
 * mutex, do W (default 32) steps of a little arithmetic, release it; and
 * every 64th iteration also take a mutex shared by all threads, which they
 * fight over, do the same work, and release it. So nearly every lock is
 * uncontended (the shim's fast path: the real trylock, and a load and a
 * branch at unlock) and a steady stream of them is contended (the slow
 * path: clock reads, the waiter side table, sampled stacks). Prints the
 * wall time in seconds, the CPU time (user + system, all threads) and a
 * checksum on stdout, as "WALL_SECONDS CPU_SECONDS CHECKSUM", like
 * mallocbench.
 *
 * With -u it measures the uncontended path alone instead: one thread, N
 * (default 20,000,000) lock/unlock pairs of one mutex with nothing in
 * between, and prints "NS_PER_PAIR". A thread is created and joined first:
 * in a process that never had a second thread glibc's pthread_mutex_lock
 * skips its atomic instruction (__libc_single_threaded) and its trylock
 * does not, which would measure a case where locks do not matter. -t
 * does the same with pthread_mutex_trylock, which the shim does not
 * interpose: glibc's own cost of the try-function the shim's lock calls.
 * Usage: lockbench [threads [iterations [work]]] | lockbench -u|-t [pairs]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BENCH_MAX_THREADS 64
#define SHARED_WORK 16 /* the shared lock is held this many times longer: a real fight */

struct bench_arg {
	pthread_mutex_t own;
	long iters, work;
	uint64_t state, sum;
	char pad[64];
};

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static uint64_t shared_sum;

static uint64_t bench_work(uint64_t x, long n)
{
	long i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static void *bench_thread(void *p)
{
	struct bench_arg *a = p;
	uint64_t x = a->state;
	long i;

	for (i = 0; i < a->iters; i++) {
		pthread_mutex_lock(&a->own);
		x = bench_work(x, a->work);
		a->sum += x & 0xff;
		pthread_mutex_unlock(&a->own);
		if ((i & 63) == 63) {
			pthread_mutex_lock(&shared);
			x = bench_work(x, a->work * SHARED_WORK);
			shared_sum += x & 0xff;
			pthread_mutex_unlock(&shared);
		}
	}
	a->state = x;
	return NULL;
}

static long bench_arg_long(int argc, char **argv, int i, long dflt, long max)
{
	long v;

	if (argc <= i)
		return dflt;
	v = strtol(argv[i], NULL, 10);
	return v < 0 || v > max ? dflt : v;
}

static double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *bench_nothing(void *p)
{
	return p;
}

/*
 * -u: the uncontended lock/unlock pair alone, in a process that has had a
 * second thread; -t (try): with pthread_mutex_trylock instead.
 */
static int bench_uncontended(long pairs, int try)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_t t;
	double t0, t1;
	long i;

	if (pthread_create(&t, NULL, bench_nothing, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	for (i = 0; i < pairs / 10; i++) { /* warm up: the first calls resolve symbols */
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	t0 = bench_now();
	if (try) {
		for (i = 0; i < pairs; i++) {
			pthread_mutex_trylock(&m);
			__asm__ volatile("" ::: "memory");
			pthread_mutex_unlock(&m);
		}
	} else {
		for (i = 0; i < pairs; i++) {
			pthread_mutex_lock(&m);
			__asm__ volatile("" ::: "memory");
			pthread_mutex_unlock(&m);
		}
	}
	t1 = bench_now();
	printf("%.3f\n", (t1 - t0) * 1e9 / (double)pairs);
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_arg *args;
	pthread_t tid[BENCH_MAX_THREADS];
	long threads, iters, work, i;
	double t0, t1, cpu;
	struct rusage ru;
	uint64_t sum = 0;

	if (argc > 1 && (strcmp(argv[1], "-u") == 0 || strcmp(argv[1], "-t") == 0))
		return bench_uncontended(bench_arg_long(argc, argv, 2, 20000000, 1L << 40),
					 argv[1][1] == 't');
	threads = bench_arg_long(argc, argv, 1, 4, BENCH_MAX_THREADS);
	iters = bench_arg_long(argc, argv, 2, 2000000, 1L << 40);
	work = bench_arg_long(argc, argv, 3, 32, 1L << 20);
	if (threads < 1)
		threads = 1;
	args = calloc((size_t)threads, sizeof(*args));
	if (args == NULL)
		return 1;
	t0 = bench_now();
	for (i = 0; i < threads; i++) {
		pthread_mutex_init(&args[i].own, NULL);
		args[i].iters = iters;
		args[i].work = work;
		args[i].state = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
		if (pthread_create(&tid[i], NULL, bench_thread, &args[i]) != 0) {
			fprintf(stderr, "lockbench: cannot create a thread\n");
			return 1;
		}
	}
	for (i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		sum += args[i].sum;
	}
	t1 = bench_now();
	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
	printf("%.4f %.4f %llu\n", t1 - t0, cpu, (unsigned long long)(sum + shared_sum));
	free(args);
	return 0;
}
