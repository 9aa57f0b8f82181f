/*
 * duty — a test target with two workers of known CPU duty cycles:
 * "spinner" spins in spin_forever() all the time; "duty" spins in
 * duty_spin() for a third of each 150 ms period and sleeps in duty_sleep()
 * for the rest. The main thread idles in pthread_join(). Each worker's
 * loop is its own function (noinline) and reads its CPU clock only every
 * few thousand iterations, so nearly all samples land in the loop itself.
 * Built with -O2 and without frame pointers.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void spin_forever(void);
void duty_spin(void);
void duty_sleep(void);

static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin_forever(void)
{
	unsigned i;

	for (;;)
		for (i = 0; i < 100000; i++)
			sink += i;
}

__attribute__((noinline)) void duty_spin(void)
{
	double end = cpu_now() + 0.050;
	unsigned i;

	while (cpu_now() < end)
		for (i = 0; i < 100000; i++)
			sink += i;
}

__attribute__((noinline)) void duty_sleep(void)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static void *spinner_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "spinner");
	spin_forever();
	return NULL;
}

static void *duty_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "duty");
	for (;;) {
		duty_spin();
		duty_sleep();
	}
	return NULL;
}

int main(void)
{
	pthread_t a, b;

	if (pthread_create(&a, NULL, spinner_main, NULL) || pthread_create(&b, NULL, duty_main, NULL)) {
		perror("pthread_create");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	pthread_join(a, NULL);
	return 0;
}
