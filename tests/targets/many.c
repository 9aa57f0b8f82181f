/*
 * many — a test target with N threads (default 200, -n N) parked a few
 * frames deep, a third each in nanosleep, pthread_cond_wait and
 * epoll_wait, plus -s S spinning threads (default 0). For snapshot and
 * scaling benchmarks and tests. Prints "ready PID" when all are parked.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

int descend(int depth, int kind);
void wait_here(int kind);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int epfd;
static int (*volatile descend_ptr)(int, int) = descend;
static volatile unsigned long sink;

__attribute__((noinline)) void wait_here(int kind)
{
	struct timespec ts = { 3600, 0 };
	struct epoll_event ev;

	for (;;) {
		if (kind == 0) {
			nanosleep(&ts, NULL);
		} else if (kind == 1) {
			pthread_mutex_lock(&mu);
			pthread_cond_wait(&cv, &mu);
			pthread_mutex_unlock(&mu);
		} else if (kind == 2) {
			epoll_wait(epfd, &ev, 1, -1);
		} else {
			for (unsigned i = 0; i < 1000000; i++)
				sink += i;
		}
	}
}

__attribute__((noinline)) int descend(int depth, int kind)
{
	if (depth == 0)
		wait_here(kind);
	else
		descend_ptr(depth - 1, kind);
	sink++;
	return depth;
}

static void *thread_main(void *arg)
{
	int kind = (int)(long)arg;
	char name[16];

	snprintf(name, sizeof(name), "%s", kind == 3 ? "spinner" : kind == 0 ? "sleeper" :
					   kind == 1 ? "waiter" : "poller");
	pthread_setname_np(pthread_self(), name);
	descend(8, kind);
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	int n = 200, spin = 0, c, i;
	pthread_attr_t attr;
	pthread_t t;

	while ((c = getopt(argc, argv, "n:s:")) != -1) {
		if (c == 'n')
			n = atoi(optarg);
		else if (c == 's')
			spin = atoi(optarg);
	}
	epfd = epoll_create1(0);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (i = 0; i < n + spin; i++)
		if (pthread_create(&t, &attr, thread_main, (void *)(long)(i < spin ? 3 : i % 3)))
			return 1;
	nanosleep(&ts, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
