/*
 * shortjob — a test target shaped like a job that ends while it is being
 * profiled (a compiler run, a batch step), to be run with
 * LD_PRELOAD=libcprof.so. It allocates and frees 1 MiB in warm_up() (so
 * that the shim has made its segment), prints "ready PID", waits for
 * SIGUSR1, then
 * keeps 32 MiB in job_alloc() (512 blocks of 64 KiB, never freed), prints
 * "done", sleeps LINGER_MS and exits 0.
 *
 * job_alloc() allocates through a table of allocator pointers, as
 * interpreters do: built -fno-pie -no-pie (shortjob-nopie) the program
 * then has a canonical PLT entry for malloc, which dlsym(RTLD_DEFAULT)
 * returns although the real malloc (the shim's) comes first.
 *
 * Usage: shortjob [LINGER_MS]   (default 100)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCKS 512
#define BLOCK (64u << 10)

void job_alloc(void);
void warm_up(void);

static volatile sig_atomic_t go;
static void *kept[BLOCKS];
static void *(*allocators[1])(size_t); /* filled in main: an address taken in code */
static void *warm[16]; /* escapes, so that the compiler keeps the allocations */

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

__attribute__((noinline)) void job_alloc(void)
{
	int i;

	for (i = 0; i < BLOCKS; i++) {
		kept[i] = allocators[0](BLOCK);
		if (kept[i])
			memset(kept[i], 1, BLOCK);
	}
}

__attribute__((noinline)) void warm_up(void)
{
	int i;

	for (i = 0; i < 16; i++) {
		warm[i] = malloc(BLOCK);
		if (warm[i])
			memset(warm[i], 2, BLOCK);
	}
	for (i = 0; i < 16; i++)
		free(warm[i]);
}

int main(int argc, char **argv)
{
	long linger = argc > 1 ? atol(argv[1]) : 100;
	struct timespec ts = { linger / 1000, (linger % 1000) * 1000000 };

	allocators[0] = malloc;
	signal(SIGUSR1, on_usr1);
	warm_up();
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (!go)
		pause();
	job_alloc();
	printf("done\n");
	fflush(stdout);
	nanosleep(&ts, NULL);
	return 0;
}
