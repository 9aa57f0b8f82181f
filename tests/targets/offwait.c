/*
 * offwait — a test target for off-CPU profiles, one way of waiting per
 * thread:
 *	"sleeper"   sleeps 10 ms at a time in nanosleep (sleep_loop);
 *	"consumer"  waits on a condition variable (consume_loop) that
 *	"producer"  signals every 5 ms from queue_push();
 *	"piper"     blocks reading a pipe (pipe_loop) that
 *	"feeder"    writes a byte to every 3 ms (feed_loop);
 *	"spinN"     spin_loop(), never blocking: with SPIN spinners beside
 *	            the other threads on fewer CPUs, preempted only.
 * With "pingpong" instead: two threads ("ping", "pong") hand a byte back
 * and forth over two pipes as fast as they can (a switch every few
 * microseconds). With "yield": two threads ("yield0", "yield1") on one
 * CPU (the first this process may use), each calling sched_yield() in a
 * loop: every call a switch to the other, hundreds of thousands a second,
 * all of it off-CPU while runnable ("preempted").
 * Usage: offwait [SPIN] | offwait pingpong | offwait yield
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long queued;
static int feed[2], ping[2], pong[2];
static volatile unsigned long spun;

void sleep_loop(void);
void consume_loop(void);
void queue_push(void);
void produce_loop(void);
void pipe_loop(void);
void feed_loop(void);
void spin_loop(void);
void yield_loop(void);

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void sleep_loop(void)
{
	for (;;)
		pause_ms(10);
}

__attribute__((noinline)) void consume_loop(void)
{
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!queued)
			pthread_cond_wait(&cv, &mu);
		queued--;
	}
}

__attribute__((noinline)) void queue_push(void)
{
	pthread_mutex_lock(&mu);
	queued++;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) void produce_loop(void)
{
	for (;;) {
		pause_ms(5);
		queue_push();
	}
}

__attribute__((noinline)) void pipe_loop(void)
{
	char c;

	while (read(feed[0], &c, 1) == 1)
		;
}

__attribute__((noinline)) void feed_loop(void)
{
	for (;;) {
		pause_ms(3);
		if (write(feed[1], "x", 1) != 1)
			return;
	}
}

__attribute__((noinline)) void spin_loop(void)
{
	for (;;)
		spun++;
}

static void *run(void *arg)
{
	const char *name = arg;

	pthread_setname_np(pthread_self(), name);
	if (!strcmp(name, "sleeper"))
		sleep_loop();
	else if (!strcmp(name, "consumer"))
		consume_loop();
	else if (!strcmp(name, "producer"))
		produce_loop();
	else if (!strcmp(name, "piper"))
		pipe_loop();
	else if (!strcmp(name, "feeder"))
		feed_loop();
	else
		spin_loop();
	return NULL;
}

static void *ping_pong(void *arg)
{
	int me = arg != NULL;
	char c = 0;

	pthread_setname_np(pthread_self(), me ? "pong" : "ping");
	if (!me && write(ping[1], &c, 1) != 1)
		return NULL;
	for (;;) {
		if (read(me ? ping[0] : pong[0], &c, 1) != 1 ||
		    write(me ? pong[1] : ping[1], &c, 1) != 1)
			return NULL;
	}
}

__attribute__((noinline)) void yield_loop(void)
{
	for (;;)
		sched_yield();
}

struct yielder {
	const char *name;
	cpu_set_t cpu;
};

static void *yielder(void *arg)
{
	struct yielder *y = arg;

	pthread_setname_np(pthread_self(), y->name);
	pthread_setaffinity_np(pthread_self(), sizeof(y->cpu), &y->cpu);
	yield_loop();
	return NULL;
}

/* Two threads yielding to each other on the first CPU main may use. */
static int yield_pair(void)
{
	static struct yielder y[2] = { { "yield0", { { 0 } } }, { "yield1", { { 0 } } } };
	cpu_set_t all;
	pthread_t t;
	int c, i;

	if (sched_getaffinity(0, sizeof(all), &all))
		return 1;
	for (c = 0; c < CPU_SETSIZE - 1 && !CPU_ISSET(c, &all); c++)
		;
	for (i = 0; i < 2; i++) {
		CPU_SET(c, &y[i].cpu);
		pthread_create(&t, NULL, yielder, &y[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "sleeper", "consumer", "producer", "piper", "feeder" };
	static char spin_names[16][16];
	pthread_t t;
	int i, spin = argc > 1 ? atoi(argv[1]) : 0;

	if (argc > 1 && !strcmp(argv[1], "pingpong")) {
		if (pipe(ping) || pipe(pong))
			return 1;
		pthread_create(&t, NULL, ping_pong, NULL);
		pthread_create(&t, NULL, ping_pong, (void *)1);
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (argc > 1 && !strcmp(argv[1], "yield")) {
		if (yield_pair())
			return 1;
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (pipe(feed))
		return 1;
	for (i = 0; i < 5; i++)
		pthread_create(&t, NULL, run, (void *)names[i]);
	for (i = 0; i < spin && i < 16; i++) {
		snprintf(spin_names[i], sizeof(spin_names[i]), "spin%d", i);
		pthread_create(&t, NULL, run, spin_names[i]);
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
