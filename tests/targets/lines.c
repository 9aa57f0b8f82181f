/*
 * lines — a target for source lines and inlined frames, built -O2 -g
 * (tests/e2e/t_lines.sh, t_debugfiles.sh): the thread "worker" runs
 * work(), which calls mix(), an always_inline helper whose loop (the line
 * marked HOT_LINE) takes most of its time, and cold(), a function of its
 * own whose loop (COLD_LINE) takes about a fifth; the thread "napper"
 * sleeps in nanosleep() under nap(), another always_inline helper (its
 * call at NAP_LINE). With "heap", the main thread also keeps 64 blocks of
 * 64 KiB allocated by hold(), inlined, at HOLD_LINE (for libcprof.so).
 * The tests find the lines by their markers. VARIANT names a build (each
 * stripped copy is compiled with its own, so each has its own build ID).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef VARIANT
#define VARIANT "plain"
#endif

static volatile uint64_t sink;
static void *held[64];

static inline __attribute__((always_inline)) uint64_t mix(uint64_t x)
{
	for (int i = 0; i < 64; i++) x = x * 6364136223846793005ull + (x >> 29) + 1442695040888963407ull; /* HOT_LINE */
	return x;
}

uint64_t cold(uint64_t x);
void work(void);
void napper(void);

__attribute__((noinline)) uint64_t cold(uint64_t x)
{
	for (int i = 0; i < 10; i++) x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull + (uint64_t)i; /* COLD_LINE */
	return x;
}

__attribute__((noinline)) void work(void)
{
	uint64_t x = 1;

	for (;;) {
		x = mix(x);
		x = cold(x);
		sink = x;
	}
}

static inline __attribute__((always_inline)) void nap(void)
{
	struct timespec ts = { 3600, 0 };

	nanosleep(&ts, NULL); /* NAP_LINE */
}

__attribute__((noinline)) void napper(void)
{
	for (;;)
		nap();
}

static inline __attribute__((always_inline)) void *hold(size_t n)
{
	void *p = malloc(n); /* HOLD_LINE */

	if (p)
		memset(p, 1, n);
	return p;
}

static void *worker_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker");
	work();
	return NULL;
}

static void *napper_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "napper");
	napper();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t w, n;
	int i;

	if (argc > 1 && !strcmp(argv[1], "heap"))
		for (i = 0; i < 64; i++)
			held[i] = hold(65536);
	pthread_create(&w, NULL, worker_main, NULL);
	pthread_create(&n, NULL, napper_main, NULL);
	printf("ready %s\n", VARIANT);
	fflush(stdout);
	for (;;)
		pause();
}
