/*
 * injectbench.c — what an injected libcprof.so costs an allocation-heavy
 * program: armed (a capture window) and dormant (after the disarm),
 * against the same program before the shim was loaded. One process, so
 * that the three are the same code and heap: R rounds before the dlopen,
 * then R pairs of (dormant, armed) rounds in alternation, each round T
 * threads x N steps of mallocbench's workload in miniature (free a random
 * slot of a window of W blocks, allocate 16 B..4 KiB log-uniform, touch
 * each cache line). Prints each phase's median CPU time per step (user +
 * system, all threads: the steadier measure on a shared machine) and the
 * ratios to "before". Under LD_PRELOAD=SHIM (the arm is refused) it
 * prints the "before" rounds as the preloaded shim's cost instead.
 * Usage: injectbench SHIM [rate [rounds [steps [threads]]]]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define WINDOW 8192
#define MAX_ROUNDS 64

typedef int arm_fn(uint64_t, uint64_t, uint64_t, uint64_t);
typedef int disarm_fn(void);

static long steps = 2000000;
static volatile uint64_t sink;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *work(void *arg)
{
	unsigned char **w = calloc(WINDOW, sizeof(*w));
	uint64_t s = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1, sum = 0;
	long i;

	for (i = 0; i < steps; i++) {
		unsigned slot = (unsigned)(rnd(&s) % WINDOW);
		size_t n = (size_t)16 << (rnd(&s) % 8), j;

		n += rnd(&s) % n;
		free(w[slot]);
		w[slot] = malloc(n);
		for (j = 0; j < n; j += 64)
			w[slot][j] = (unsigned char)j;
		sum += w[(slot * 7 + 1) % WINDOW] ? w[(slot * 7 + 1) % WINDOW][0] : 0;
	}
	for (i = 0; i < WINDOW; i++)
		free(w[i]);
	free(w);
	sink += sum;
	return NULL;
}

static double cpu_seconds(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
	       u.ru_stime.tv_usec / 1e6;
}

/* One round: threads x steps; CPU ns per step. */
static double round_ns(int threads)
{
	pthread_t t[16];
	double c0 = cpu_seconds();
	int i;

	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, work, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return (cpu_seconds() - c0) * 1e9 / ((double)steps * threads);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	double before[MAX_ROUNDS], dormant[MAX_ROUNDS], armed[MAX_ROUNDS], b, d, a;
	uint64_t rate = argc > 2 ? strtoull(argv[2], NULL, 0) : 524288;
	int rounds = argc > 3 ? atoi(argv[3]) : 5, threads = argc > 5 ? atoi(argv[5]) : 2, i, rc;
	arm_fn *arm;
	disarm_fn *disarm;
	void *h;

	if (argc < 2) {
		fprintf(stderr, "usage: injectbench SHIM [rate [rounds [steps [threads]]]]\n");
		return 2;
	}
	if (argc > 4)
		steps = atol(argv[4]);
	if (rounds < 1 || rounds > MAX_ROUNDS || threads < 1 || threads > 16)
		return 2;
	/*
	 * Warm-up: a plain process gets faster over its first rounds (heap
	 * growth, the arenas settling; measured without any shim), which
	 * would be charged to "before" alone.
	 */
	for (i = 0; i < 2 * rounds; i++)
		(void)round_ns(threads);
	for (i = 0; i < rounds; i++)
		before[i] = round_ns(threads);
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "injectbench: %s\n", dlerror());
		return 1;
	}
	arm = (arm_fn *)dlsym(h, "cprof_inject_arm");
	disarm = (disarm_fn *)dlsym(h, "cprof_inject_disarm");
	if (arm == NULL || disarm == NULL)
		return 1;
	if (arm(1, rate, 0, 0) == -17) { /* -EEXIST: preloaded, the comparison's other side */
		b = median(before, rounds);
		printf("preloaded %.1f  (CPU ns per step, median of %d rounds)\n", b, rounds);
		return 0;
	}
	disarm();
	for (i = 0; i < rounds; i++) {
		dormant[i] = round_ns(threads);
		rc = arm(1, rate, 0, 0);
		if (rc <= 0) {
			fprintf(stderr, "injectbench: arm: %d %s\n", rc,
				(char *)dlsym(h, "cprof_inject_why"));
			return 1;
		}
		armed[i] = round_ns(threads);
		disarm();
	}
	b = median(before, rounds);
	d = median(dormant, rounds);
	a = median(armed, rounds);
	printf("CPU ns per step (median of %d rounds, %d threads x %ld steps, rate %llu)\n", rounds,
	       threads, steps, (unsigned long long)rate);
	printf("before   %.1f\n", b);
	printf("dormant  %.1f  (%.3fx before)\n", d, d / b);
	printf("armed    %.1f  (%.3fx before, %.3fx dormant)\n", a, a / b, a / d);
	return 0;
}
