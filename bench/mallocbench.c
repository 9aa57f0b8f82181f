/*
 * mallocbench.c — an allocation-heavy multi-threaded workload for measuring
 * what an allocator (or libcprof.so in front of one) costs a program.
 * Each of T threads (default 2) performs N (default 4,000,000) steps on a
 * private window of W (default 8192) live blocks: pick a random slot, free
 * its block, allocate a new one of a random size from 16 B to 4 KiB
 * (log-uniform: as many 16-31 B blocks as 2-4 KiB ones, as in most
 * programs), and write one byte in each of its cache lines, then read the
 * first byte of another random live block. One step in 64 uses calloc and
 * one in 64 realloc grows the block, so those paths are exercised too.
 * The window keeps ~8 MB live per thread and mixes reuse with new memory,
 * which is what real allocation-heavy code (parsers, servers, compilers)
 * does between computations. Prints the wall time in seconds and the
 * CPU time (user + system, all threads) on stdout as
 * "WALL_SECONDS CPU_SECONDS CHECKSUM": on a shared machine the CPU time is
 * the steadier measure, since waiting for a CPU does not count in it.
 * Usage: mallocbench [threads [steps [window]]]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BENCH_MAX_THREADS 64
#define BENCH_MAX_WINDOW (1 << 20)

struct bench_arg {
	long steps, window;
	uint64_t seed, sum;
};

static uint64_t bench_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* 16 B .. 4 KiB, log-uniform: a random exponent 4..11, then uniform within it. */
static size_t bench_size(uint64_t r)
{
	unsigned e = 4 + (unsigned)(r % 8);

	return ((size_t)1 << e) + (size_t)((r >> 8) & (((size_t)1 << e) - 1));
}

static void *bench_thread(void *p)
{
	struct bench_arg *a = p;
	unsigned char **live = calloc((size_t)a->window, sizeof(*live));
	size_t *sizes = calloc((size_t)a->window, sizeof(*sizes));
	uint64_t s = a->seed, sum = 0;
	long i, k;

	if (live == NULL || sizes == NULL)
		goto err;
	for (i = 0; i < a->steps; i++) {
		uint64_t r = bench_rand(&s);
		size_t n = bench_size(r >> 16), j;
		unsigned char *b;

		k = (long)(r % (uint64_t)a->window);
		if ((r >> 40) % 64 == 0 && live[k] != NULL) {
			b = realloc(live[k], sizes[k] + n); /* grow in place or move */
			if (b == NULL)
				goto err;
			n += sizes[k];
		} else {
			free(live[k]);
			b = (r >> 40) % 64 == 1 ? calloc(1, n) : malloc(n);
			if (b == NULL)
				goto err;
		}
		for (j = 0; j < n; j += 64)
			b[j] = (unsigned char)i;
		b[n - 1] = (unsigned char)j;
		live[k] = b;
		sizes[k] = n;
		k = (long)((r >> 24) % (uint64_t)a->window);
		if (live[k] != NULL)
			sum += live[k][0];
	}
	for (k = 0; k < a->window; k++)
		free(live[k]);
	a->sum = sum;
	free(live);
	free(sizes);
	return NULL;
err:
	fprintf(stderr, "mallocbench: out of memory\n");
	exit(1);
}

static long bench_arg_long(int argc, char **argv, int i, long dflt, long max)
{
	long v;

	if (argc <= i)
		return dflt;
	v = strtol(argv[i], NULL, 10);
	return v < 1 || v > max ? dflt : v;
}

int main(int argc, char **argv)
{
	struct bench_arg args[BENCH_MAX_THREADS];
	pthread_t tid[BENCH_MAX_THREADS];
	long threads = bench_arg_long(argc, argv, 1, 2, BENCH_MAX_THREADS);
	long steps = bench_arg_long(argc, argv, 2, 4000000, 1L << 40);
	long window = bench_arg_long(argc, argv, 3, 8192, BENCH_MAX_WINDOW);
	struct timespec t0, t1;
	struct rusage ru;
	uint64_t sum = 0;
	double secs, cpu;
	long i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < threads; i++) {
		args[i] = (struct bench_arg){ steps, window, 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1), 0 };
		if (pthread_create(&tid[i], NULL, bench_thread, &args[i]) != 0) {
			fprintf(stderr, "mallocbench: cannot create a thread\n");
			return 1;
		}
	}
	for (i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		sum += args[i].sum;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
	printf("%.4f %.4f %llu\n", secs, cpu, (unsigned long long)sum);
	return 0;
}
