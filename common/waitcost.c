/*
 * waitcost.c — the CPU of one wait, measured on our own thread (waitcost.h).
 * Why sleeps of 20 us: long enough that the thread really switches out
 * (the hrtimer is armed and the CPU goes idle or to another thread), short
 * enough that 128 of them take a few milliseconds. On this project's
 * 2-CPU VMs one clock_nanosleep round trip costs 6-7 us of the sleeping
 * thread's CPU (150 us sleeps and 1 us sleeps alike); the event-loop
 * target's waits cost it 6-10 us, so the estimate is close for it and
 * errs low for waits that also do work in the kernel (epoll_wait with
 * many ready descriptors), whose extra is sampled where it runs.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/waitcost.h"

#define ROUNDS 32
#define PER_ROUND 4
#define SLEEP_NS 20000
#define COST_MAX_NS 50000 /* more is not a wait's cost but a busy host's */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t cost;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int thread_cpu(uint64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return -1;
	*ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

static void measure(void)
{
	struct timespec nap = { 0, SLEEP_NS };
	uint64_t per[ROUNDS], a, b;
	int r, i;

	for (r = 0; r < ROUNDS; r++) {
		if (thread_cpu(&a) < 0)
			return;
		for (i = 0; i < PER_ROUND; i++)
			clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL);
		if (thread_cpu(&b) < 0)
			return;
		per[r] = b > a ? (b - a) / PER_ROUND : 0;
	}
	qsort(per, ROUNDS, sizeof(per[0]), cmp_u64);
	cost = per[ROUNDS / 4] < COST_MAX_NS ? per[ROUNDS / 4] : COST_MAX_NS;
}

uint64_t waitcost_ns(void)
{
	pthread_once(&once, measure);
	return cost;
}

uint64_t waitcost_of(uint64_t slices, uint64_t cost_ns, uint64_t used)
{
	if (!cost_ns || !slices)
		return 0;
	if (slices > used / cost_ns)
		return used;
	return slices * cost_ns;
}
