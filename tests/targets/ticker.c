/*
 * ticker — a test target that shows whether it is disturbed. A "worker"
 * thread spins in work_loop() and counts rounds; a "waiter" thread sits in
 * epoll_wait() with a timeout and counts EINTRs; every 50 ms the main
 * thread prints "tick ROUNDS EINTRS" (progress, and whether any blocking
 * call was broken). Options: -t SECONDS exits after that long; -i keeps
 * the worker idle (sleeping) instead of spinning.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

void work_loop(void);

static volatile unsigned long rounds, eintrs, sink;
static int idle;

__attribute__((noinline)) void work_loop(void)
{
	struct timespec ts = { 0, 1000000 };
	unsigned i;

	for (;;) {
		if (idle)
			nanosleep(&ts, NULL);
		else
			for (i = 0; i < 100000; i++)
				sink += i;
		rounds++;
	}
}

static void *worker_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "worker");
	work_loop();
	return NULL;
}

static void *waiter_main(void *arg)
{
	struct epoll_event ev;
	int fd = epoll_create1(0);

	(void)arg;
	pthread_setname_np(pthread_self(), "waiter");
	for (;;)
		if (epoll_wait(fd, &ev, 1, 200) < 0 && errno == EINTR)
			eintrs++;
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec ts = { 0, 50 * 1000000 };
	double limit = 0, t = 0;
	pthread_t a, b;
	int c;

	while ((c = getopt(argc, argv, "t:i")) != -1) {
		if (c == 't')
			limit = atof(optarg);
		else if (c == 'i')
			idle = 1;
	}
	if (pthread_create(&a, NULL, worker_main, NULL) || pthread_create(&b, NULL, waiter_main, NULL))
		return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		nanosleep(&ts, NULL);
		t += 0.05;
		printf("tick %lu %lu\n", rounds, eintrs);
		fflush(stdout);
		if (limit > 0 && t >= limit)
			return 0;
	}
}
