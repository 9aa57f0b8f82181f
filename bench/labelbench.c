/*
 * labelbench.c — what changing a thread's labels costs (include/cprof.h,
 * shim/labels.c). Each of T threads (default 1) runs R rounds of: D
 * nested cprof_labels_push calls (one pair each, "endpoint" or "tenant"
 * or "job" set to one of 8 values, so every set is interned after the
 * first rounds and each push merges over the current set), then D
 * cprof_labels_pop calls, timing the push phase and the pop phase
 * separately (a clock read per phase, shared by D calls), and one
 * cprof_labels_set of two pairs then cprof_labels_clear, timed together.
 * A thread's figure is the median of its phases (ns per call), so that
 * the rare phase in which it was preempted (more threads than CPUs) does
 * not count. Prints "THREADS PUSH_NS POP_NS SET_CLEAR_NS ACTIVE": the
 * median over threads, and whether libcprof.so recorded the labels (0:
 * the calls were the header's no-ops).
 * Usage: labelbench [threads [rounds [depth [values]]]]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cprof.h>

static unsigned rounds = 200000, depth = 8, nvals = 4;

#define KEEP 4096 /* phases kept per thread for the median (every rounds / KEEP-th) */

struct result {
	double push, pop, setclear;
	uint32_t v[3][KEEP];
};

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static double median_u32(uint32_t *v, unsigned n)
{
	qsort(v, n, sizeof(v[0]), by_u32);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg)
{
	static const char *const keys[3] = { "endpoint", "tenant", "job" };
	static const char *const vals[8] = { "/search", "/upload", "/login", "/feed",
					     "a", "b", "c", "d" };
	struct result *r = arg;
	uint64_t t0, t1, t2, t3;
	unsigned i, d, k = 0, every = rounds / KEEP + 1;

	for (i = 0; i < rounds; i++) {
		t0 = now_ns();
		for (d = 0; d < depth; d++)
			cprof_labels_push(keys[d % 3], vals[(i + d) % nvals], NULL);
		t1 = now_ns();
		for (d = 0; d < depth; d++)
			cprof_labels_pop();
		t2 = now_ns();
		cprof_labels_set("endpoint", vals[i % 4], "tenant", vals[4 + i % 4], NULL);
		cprof_labels_clear();
		t3 = now_ns();
		if (i % every == 0 && k < KEEP) {
			r->v[0][k] = (uint32_t)(t1 - t0);
			r->v[1][k] = (uint32_t)(t2 - t1);
			r->v[2][k++] = (uint32_t)(t3 - t2);
		}
	}
	r->push = median_u32(r->v[0], k) / depth;
	r->pop = median_u32(r->v[1], k) / depth;
	r->setclear = median_u32(r->v[2], k) / 2;
	return NULL;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(struct result *r, unsigned n, size_t field)
{
	double v[256];
	unsigned i;

	for (i = 0; i < n; i++)
		v[i] = *(const double *)((const char *)&r[i] + field);
	qsort(v, n, sizeof(v[0]), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static struct result r[256];
	pthread_t th[256];
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1, i;

	if (argc > 2)
		rounds = (unsigned)atoi(argv[2]);
	if (argc > 3)
		depth = (unsigned)atoi(argv[3]);
	if (argc > 4)
		nvals = (unsigned)atoi(argv[4]);
	if (n < 1 || n > 256 || rounds < 1 || depth < 1 || depth > 64 || nvals < 1 ||
	    nvals > 8) {
		fprintf(stderr, "usage: labelbench [threads (1-256) [rounds [depth (1-64) "
				"[values (1-8)]]]]\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, run, &r[i]) != 0)
			return 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("%u %.1f %.1f %.1f %d\n", n, median(r, n, offsetof(struct result, push)),
	       median(r, n, offsetof(struct result, pop)),
	       median(r, n, offsetof(struct result, setclear)), cprof_labels_active());
	return 0;
}
