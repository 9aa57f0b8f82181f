/*
 * labelserver — a test target for labels (include/cprof.h): a pool of
 * worker threads serving two request types through the same code, told
 * apart only by the labels each request pushes:
 *
 *   endpoint=/search   burn(3 units) + 2 x malloc(2 KiB), kept live
 *   endpoint=/upload   burn(1 unit)  + 1 x malloc(64 KiB), kept live
 *
 * (plus tenant=a|b|c, nested: pushed inside the endpoint's push). Each
 * type keeps a ring of live blocks, filled before "ready" under the
 * type's labels and then replaced block by block by the requests (a
 * freed block and a new one of the same size), so each type's live bytes
 * are fixed and known: search 16384 x 2 KiB = 32 MiB, upload 1024 x
 * 64 KiB = 64 MiB. The target measures what each type costs: the CPU
 * time of its requests (CLOCK_THREAD_CPUTIME_ID around the labelled
 * region) and the bytes it allocated. On SIGUSR1 it prints
 *
 *   end cpu_search=NS cpu_upload=NS alloc_search=B alloc_upload=B live_search=B live_upload=B
 *
 * Options: -w WORKERS (4), -n REQUESTS (0: serve until killed; else serve
 * that many and print "done CHECKSUM active=0|1"), -u units scale (1).
 * Prints "ready PID active=0|1" (whether libcprof.so records labels).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cprof.h>

#define UNIT_ITERS 200000u

struct rtype {
	const char *endpoint;
	unsigned units;          /* burn() units per request */
	unsigned blocks;         /* blocks allocated per request */
	size_t block;            /* their size */
	size_t nring;            /* live blocks kept */
	void **ring;
	size_t next;
	pthread_mutex_t lock;
	atomic_ullong cpu_ns, alloc_bytes;
};

static struct rtype types[2] = {
	{ "/search", 3, 2, 2048, 16384, NULL, 0, PTHREAD_MUTEX_INITIALIZER, 0, 0 },
	{ "/upload", 1, 1, 65536, 1024, NULL, 0, PTHREAD_MUTEX_INITIALIZER, 0, 0 },
};
static const char *const tenants[3] = { "a", "b", "c" };
static atomic_ullong next_req, served, checksum;
static unsigned long long limit;
static volatile sig_atomic_t report;
static unsigned scale = 1;

void burn(unsigned units);
void *take_block(struct rtype *t, size_t i);
void handle(uint64_t req);

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The same work for every type: only the labels tell them apart. */
__attribute__((noinline)) void burn(unsigned units)
{
	volatile uint64_t x = 1;
	uint64_t i, n = (uint64_t)units * UNIT_ITERS * scale;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	atomic_fetch_add(&checksum, x & 0xff);
}

/* A new block for ring slot i; the old one is freed. */
__attribute__((noinline)) void *take_block(struct rtype *t, size_t i)
{
	void *p = malloc(t->block), *old;

	if (!p)
		abort();
	memset(p, (int)(i & 0xff), 64);
	atomic_fetch_add(&t->alloc_bytes, t->block);
	pthread_mutex_lock(&t->lock);
	old = t->ring[i];
	t->ring[i] = p;
	pthread_mutex_unlock(&t->lock);
	return old;
}

__attribute__((noinline)) void handle(uint64_t req)
{
	struct rtype *t = &types[req % 4 == 3]; /* three searches, then an upload */
	uint64_t c0, c1;
	unsigned b;
	size_t i;

	/*
	 * The clock reads (system calls) outside the labelled region: a
	 * thread preempted at a call's exit resumes there, and on CI's guests
	 * samples crowd at such resume points; inside, the one at the start
	 * carried the next request's labels (a quarter uploads by count for a
	 * tenth by CPU), which under load inflated /upload (doc/limits.md).
	 */
	c0 = thread_cpu_ns();
	cprof_labels_push("endpoint", t->endpoint, NULL);
	cprof_labels_push("tenant", tenants[req % 3], NULL);
	burn(t->units);
	for (b = 0; b < t->blocks; b++) {
		pthread_mutex_lock(&t->lock);
		i = t->next++ % t->nring;
		pthread_mutex_unlock(&t->lock);
		free(take_block(t, i));
	}
	cprof_labels_pop();
	cprof_labels_pop();
	c1 = thread_cpu_ns();
	atomic_fetch_add(&t->cpu_ns, c1 - c0);
}

static void *worker(void *arg)
{
	uint64_t r;

	(void)arg;
	for (;;) {
		r = atomic_fetch_add(&next_req, 1);
		if (limit && r >= limit)
			return NULL;
		handle(r);
		atomic_fetch_add(&served, 1);
	}
}

static void on_usr1(int sig)
{
	(void)sig;
	report = 1;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	unsigned nw = 4, i;
	size_t k;
	int c;

	while ((c = getopt(argc, argv, "w:n:u:")) != -1) {
		switch (c) {
		case 'w': nw = (unsigned)atoi(optarg); break;
		case 'n': limit = strtoull(optarg, NULL, 10); break;
		case 'u': scale = (unsigned)atoi(optarg); break;
		default: return 2;
		}
	}
	if (nw < 1 || nw > 64 || scale < 1)
		return 2;
	signal(SIGUSR1, on_usr1);
	/* Each type's live blocks, made under its labels. */
	for (k = 0; k < 2; k++) {
		struct rtype *t = &types[k];

		t->ring = calloc(t->nring, sizeof(*t->ring));
		if (!t->ring)
			return 1;
		cprof_labels_push("endpoint", t->endpoint, NULL);
		for (i = 0; i < t->nring; i++)
			free(take_block(t, i));
		cprof_labels_pop();
		t->alloc_bytes = 0;
	}
	printf("ready %d active=%d\n", (int)getpid(), cprof_labels_active());
	fflush(stdout);
	for (i = 0; i < nw; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	if (limit) {
		for (i = 0; i < nw; i++)
			pthread_join(th[i], NULL);
		printf("done %llu served=%llu active=%d\n", (unsigned long long)checksum,
		       (unsigned long long)served, cprof_labels_active());
		return 0;
	}
	for (;;) {
		usleep(10000);
		if (!report)
			continue;
		report = 0;
		printf("end cpu_search=%llu cpu_upload=%llu alloc_search=%llu alloc_upload=%llu "
		       "live_search=%zu live_upload=%zu\n",
		       (unsigned long long)types[0].cpu_ns, (unsigned long long)types[1].cpu_ns,
		       (unsigned long long)types[0].alloc_bytes,
		       (unsigned long long)types[1].alloc_bytes, types[0].nring * types[0].block,
		       types[1].nring * types[1].block);
		fflush(stdout);
	}
}
