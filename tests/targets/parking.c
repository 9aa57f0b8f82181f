/*
 * parking — a test target whose threads wait in every common way, each
 * group in a function of its own and named with pthread_setname_np:
 *
 *   group       threads  waits in                         function
 *   sleeper        2     nanosleep                        park_nanosleep
 *   condwait       3     pthread_cond_wait                park_cond
 *   reader         4     read on a pipe                   park_read
 *   poller         5     epoll_wait                       park_epoll
 *   selector       6     select                           park_select
 *   pollwait       7     poll                             park_poll
 *   semwait        8     sem_wait                         park_sem
 *   spinner        1     (spins)                          park_spin
 *   flapper        1     spins 20 us, epoll_wait 1 ms     park_flap
 *
 * The flapper is there to race a CPU profiler: it is running when the
 * profiler decides to stop it and often asleep an instant later.
 *
 * Every wait that returns EINTR, or returns when nothing could have woken
 * it, counts as a disturbance. Every 50 ms the main thread prints
 * "tick DISTURBANCES SPINS"; a profiler that never disturbs the target
 * keeps the first number at zero.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

void park_nanosleep(void);
void park_cond(void);
void park_read(void);
void park_epoll(void);
void park_select(void);
void park_poll(void);
void park_sem(void);
void park_spin(void);
void park_flap(void);

static atomic_ulong disturbances, spins;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int pipefd[2], epfd, flapfd;
static sem_t sem;

static void disturbed(void)
{
	atomic_fetch_add(&disturbances, 1);
}

__attribute__((noinline)) void park_nanosleep(void)
{
	struct timespec ts = { 3600, 0 };

	for (;;)
		if (nanosleep(&ts, NULL) < 0)
			disturbed();
}

__attribute__((noinline)) void park_cond(void)
{
	pthread_mutex_lock(&mu);
	for (;;)
		if (pthread_cond_wait(&cv, &mu) != 0 || 1)
			disturbed(); /* nobody signals: any return is spurious */
}

__attribute__((noinline)) void park_read(void)
{
	char c;

	for (;;)
		if (read(pipefd[0], &c, 1) != 0) /* nobody writes */
			disturbed();
}

__attribute__((noinline)) void park_epoll(void)
{
	struct epoll_event ev;

	for (;;)
		if (epoll_wait(epfd, &ev, 1, -1) != 0)
			disturbed();
}

__attribute__((noinline)) void park_select(void)
{
	struct timeval tv;

	for (;;) {
		tv.tv_sec = 3600;
		tv.tv_usec = 0;
		if (select(0, NULL, NULL, NULL, &tv) != 0)
			disturbed();
	}
}

__attribute__((noinline)) void park_poll(void)
{
	for (;;)
		if (poll(NULL, 0, 3600 * 1000) != 0)
			disturbed();
}

__attribute__((noinline)) void park_sem(void)
{
	for (;;)
		if (sem_wait(&sem) != 0 || 1)
			disturbed(); /* nobody posts */
}

__attribute__((noinline)) void park_spin(void)
{
	volatile unsigned long x = 0;
	unsigned i;

	for (;;) {
		for (i = 0; i < 100000; i++)
			x += i;
		atomic_fetch_add(&spins, 1);
	}
}

__attribute__((noinline)) void park_flap(void)
{
	struct epoll_event ev;
	struct timespec t0, t1;

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &t1);
		while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 20000);
		if (epoll_wait(flapfd, &ev, 1, 1) != 0)
			disturbed();
	}
}

static const struct group {
	const char *name;
	int count;
	void (*park)(void);
} groups[] = {
	{ "sleeper", 2, park_nanosleep }, { "condwait", 3, park_cond },
	{ "reader", 4, park_read },       { "poller", 5, park_epoll },
	{ "selector", 6, park_select },   { "pollwait", 7, park_poll },
	{ "semwait", 8, park_sem },       { "spinner", 1, park_spin },
	{ "flapper", 1, park_flap },
};

static void *group_main(void *arg)
{
	const struct group *g = arg;

	pthread_setname_np(pthread_self(), g->name);
	g->park();
	return NULL;
}

int main(void)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	pthread_t t;
	size_t i;
	int j;

	if (pipe(pipefd) < 0 || (epfd = epoll_create1(0)) < 0 || (flapfd = epoll_create1(0)) < 0 ||
	    sem_init(&sem, 0, 0) < 0)
		return 1;
	for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		for (j = 0; j < groups[i].count; j++)
			if (pthread_create(&t, NULL, group_main, (void *)&groups[i]))
				return 1;
	/* Let every thread reach its wait before saying ready. */
	nanosleep(&ts, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		nanosleep(&ts, NULL);
		printf("tick %lu %lu\n", atomic_load(&disturbances), atomic_load(&spins));
		fflush(stdout);
	}
}
