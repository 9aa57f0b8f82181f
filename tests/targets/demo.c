/*
 * demo — the workload `make demo` profiles: a toy request server whose
 * worker threads parse, hash and sort "requests" in distinct functions, so
 * that the profile has an obvious shape: parse_request ~ 1/2, hash_body
 * ~ 1/3, sort_results ~ 1/6 of the workers' CPU. A logger thread mostly
 * sleeps. Built like production code: -O2, no frame pointers.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 2

uint64_t parse_request(const char *req, size_t n);
uint64_t hash_body(const char *body, size_t n);
void sort_results(int *v, size_t n);
void handle_request(unsigned seed);

static volatile uint64_t sink;

__attribute__((noinline)) uint64_t parse_request(const char *req, size_t n)
{
	uint64_t fields = 0;
	size_t i, r;

	for (r = 0; r < 60; r++)
		for (i = 0; i < n; i++)
			fields += req[i] == ':' || req[i] == '\n';
	return fields;
}

__attribute__((noinline)) uint64_t hash_body(const char *body, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t i, r;

	for (r = 0; r < 40; r++)
		for (i = 0; i < n; i++)
			h = (h ^ (unsigned char)body[i]) * 1099511628211ull;
	return h;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

__attribute__((noinline)) void sort_results(int *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_int);
	sink += (uint64_t)v[n / 2]; /* not a tail call: keep this frame */
}

__attribute__((noinline)) void handle_request(unsigned seed)
{
	static __thread char req[4096];
	static __thread int results[2048];
	size_t i;

	for (i = 0; i < sizeof(req); i++)
		req[i] = (char)("GET /a:b\nHost: x\n"[(seed + i) % 17]);
	for (i = 0; i < 2048; i++)
		results[i] = (int)((seed * 2654435761u + i * 40503u) >> 7);
	sink += parse_request(req, sizeof(req));
	sink += hash_body(req, sizeof(req));
	sort_results(results, 2048);
}

static void *worker(void *arg)
{
	char name[16];
	unsigned seed = (unsigned)(uintptr_t)arg;

	snprintf(name, sizeof(name), "worker-%u", seed);
	pthread_setname_np(pthread_self(), name);
	for (;;)
		handle_request(seed++);
	return NULL;
}

static void *logger(void *arg)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };

	(void)arg;
	pthread_setname_np(pthread_self(), "logger");
	for (;;)
		nanosleep(&ts, NULL);
	return NULL;
}

int main(void)
{
	pthread_t t;
	uintptr_t i;

	for (i = 0; i < WORKERS; i++)
		if (pthread_create(&t, NULL, worker, (void *)(i + 1)))
			return 1;
	if (pthread_create(&t, NULL, logger, NULL))
		return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	pthread_join(t, NULL);
	return 0;
}
