/*
 * heapload — a test target with known heap contents, to be run with
 * LD_PRELOAD=libcprof.so. Each live set is kept by a function of its own:
 *
 *   keep_small     20000 x malloc(4096)                 81,920,000 bytes live
 *   keep_big       8 x malloc(1 MiB)                     8,388,608
 *   keep_calloc    20000 x calloc(1, 3200)              64,000,000
 *   keep_realloc   one buffer grown by realloc 1 KiB -> 4 MiB  4,194,304
 *   keep_aligned   8000 x posix_memalign(64, 8192)      65,536,000
 *   churn          1 GiB in 256-byte blocks, all freed   0 live, 1 GiB allocated
 *
 * then spawn_five() creates 5 threads and spawn_three() 3, and a "steady"
 * thread allocates and frees 16 MiB per second in 1 KiB blocks in
 * steady_alloc(), paced by the clock, for as long as the program runs.
 * It prints "ready PID" when the live sets are in place, then every 100 ms
 * "tick BYTES" with the bytes steady_alloc() has allocated so far.
 * With -f it also forks a child that inherits all of the above, frees
 * keep_big's 8 MiB, keeps 16 MiB more in keep_child() (1 KiB blocks) and
 * prints "child PID" once they are allocated. With -d the same child is
 * made as a daemon makes its worker: fork, the first child forks again
 * and exits, the grandchild calls setsid; "child PID" names the
 * grandchild.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEADY_RATE (16u << 20)

void keep_small(void);
void keep_big(void);
void keep_calloc(void);
void keep_realloc(void);
void keep_aligned(void);
void churn(void);
void spawn_five(void);
void spawn_three(void);
void steady_alloc(void);
void keep_child(void);

static void *kept[64000];
static void *big_blocks[8];
static size_t nkept;
static atomic_ullong steady_bytes;

static void keep(void *p)
{
	if (!p) {
		perror("heapload");
		exit(1);
	}
	memset(p, 1, 64); /* touch it */
	kept[nkept++] = p;
}

__attribute__((noinline)) void keep_small(void)
{
	for (int i = 0; i < 20000; i++)
		keep(malloc(4096));
}

__attribute__((noinline)) void keep_big(void)
{
	for (int i = 0; i < 8; i++) {
		keep(malloc(1 << 20));
		big_blocks[i] = kept[nkept - 1];
	}
}

__attribute__((noinline)) void keep_calloc(void)
{
	for (int i = 0; i < 20000; i++)
		keep(calloc(1, 3200));
}

__attribute__((noinline)) void keep_realloc(void)
{
	void *p = NULL;

	for (size_t n = 1024; n <= (4u << 20); n *= 2) {
		p = realloc(p, n);
		if (!p)
			exit(1);
	}
	keep(p);
}

__attribute__((noinline)) void keep_aligned(void)
{
	void *p;

	for (int i = 0; i < 8000; i++) {
		if (posix_memalign(&p, 64, 8192))
			exit(1);
		keep(p);
	}
}

__attribute__((noinline)) void churn(void)
{
	static void *ring[64];

	for (size_t i = 0; i < (1u << 30) / 256; i++) {
		free(ring[i % 64]);
		ring[i % 64] = malloc(256);
		((volatile char *)ring[i % 64])[0] = 1;
	}
	for (int i = 0; i < 64; i++)
		free(ring[i]);
}

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

__attribute__((noinline)) void spawn_five(void)
{
	pthread_t t;

	for (int i = 0; i < 5; i++)
		pthread_create(&t, NULL, idle_thread, NULL);
}

__attribute__((noinline)) void spawn_three(void)
{
	pthread_t t;

	for (int i = 0; i < 3; i++)
		pthread_create(&t, NULL, idle_thread, NULL);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void steady_alloc(void)
{
	struct timespec ms = { 0, 1000000 };
	double t0 = now();
	unsigned long long done = 0;

	for (;;) {
		while (done < (now() - t0) * STEADY_RATE) {
			void *p = malloc(1024);

			((volatile char *)p)[0] = 1;
			free(p);
			done += 1024;
		}
		atomic_store(&steady_bytes, done);
		nanosleep(&ms, NULL);
	}
}

static void *steady_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "steady");
	steady_alloc();
	return NULL;
}

__attribute__((noinline)) void keep_child(void)
{
	static void *blocks[16384];

	for (int i = 0; i < 16384; i++) {
		blocks[i] = malloc(1024);
		if (!blocks[i])
			exit(1);
		memset(blocks[i], 2, 64);
	}
}

static void fork_child(int daemon)
{
	int fds[2];
	pid_t pid, got;

	if (pipe(fds) < 0)
		exit(1);
	pid = fork();
	if (pid == 0) {
		if (daemon) {
			pid_t g = fork();

			if (g != 0)
				_exit(g < 0);
			setsid();
		}
		for (int i = 0; i < 8; i++)
			free(big_blocks[i]);
		keep_child();
		got = getpid();
		if (write(fds[1], &got, sizeof(got)) != (ssize_t)sizeof(got))
			_exit(1);
		for (;;)
			pause();
	}
	if (pid < 0 || read(fds[0], &got, sizeof(got)) != (ssize_t)sizeof(got))
		exit(1);
	if (daemon)
		waitpid(pid, NULL, 0);
	printf("child %d\n", (int)got);
}

int main(int argc, char **argv)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	pthread_t t;

	keep_small();
	keep_big();
	keep_calloc();
	keep_realloc();
	keep_aligned();
	churn();
	spawn_five();
	spawn_three();
	if (argc > 1 && (!strcmp(argv[1], "-f") || !strcmp(argv[1], "-d")))
		fork_child(!strcmp(argv[1], "-d"));
	pthread_create(&t, NULL, steady_thread, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		nanosleep(&ts, NULL);
		printf("tick %llu\n", atomic_load(&steady_bytes));
		fflush(stdout);
	}
}
