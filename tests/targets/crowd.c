/*
 * crowd — a test target with far more runnable threads than CPUs, like a
 * busy server: C compute threads (default 12) in four groups, each group
 * spinning in its own function (calc_a .. calc_d, thread names "calc_a"
 * ..), and P pairs of I/O threads (default 4, thread name "pipe") that
 * pass a token back and forth over pipes, blocking in read(2) and doing a
 * little work (pipe_work) per message. Per-function truth is per-thread
 * truth: /proc/PID/task/TID/schedstat of the threads with that name.
 *
 * Usage: crowd [C [P]]. Prints "ready PID" when every thread runs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void calc_a(void);
void calc_b(void);
void calc_c(void);
void calc_d(void);
void pipe_work(void);

static volatile unsigned long sink;
static volatile int started;

#define SPIN(name)                                             \
	__attribute__((noinline)) void name(void)              \
	{                                                      \
		unsigned i;                                    \
		for (;;)                                       \
			for (i = 0; i < 100000; i++)           \
				sink += i;                     \
	}
SPIN(calc_a)
SPIN(calc_b)
SPIN(calc_c)
SPIN(calc_d)

__attribute__((noinline)) void pipe_work(void)
{
	unsigned i;

	for (i = 0; i < 20000; i++)
		sink += i;
}

struct end {
	int in, out;
};

static void *pipe_main(void *arg)
{
	struct end *e = arg;
	char c;

	pthread_setname_np(pthread_self(), "pipe");
	__sync_fetch_and_add(&started, 1);
	for (;;) {
		if (read(e->in, &c, 1) != 1)
			return NULL;
		pipe_work();
		if (write(e->out, &c, 1) != 1)
			return NULL;
	}
}

static void *calc_main(void *arg)
{
	static const char *names[] = { "calc_a", "calc_b", "calc_c", "calc_d" };
	static void (*const fns[])(void) = { calc_a, calc_b, calc_c, calc_d };
	long g = (long)arg;

	pthread_setname_np(pthread_self(), names[g]);
	__sync_fetch_and_add(&started, 1);
	fns[g]();
	return NULL;
}

int main(int argc, char **argv)
{
	int ncalc = argc > 1 ? atoi(argv[1]) : 12, npairs = argc > 2 ? atoi(argv[2]) : 4;
	pthread_t t;
	int i, ab[2], ba[2];
	struct end *e;

	if (ncalc < 0 || ncalc > 256 || npairs < 0 || npairs > 64) {
		fprintf(stderr, "usage: crowd [C [P]]\n");
		return 2;
	}
	for (i = 0; i < ncalc; i++)
		if (pthread_create(&t, NULL, calc_main, (void *)(long)(i % 4))) {
			perror("pthread_create");
			return 1;
		}
	for (i = 0; i < npairs; i++) {
		e = calloc(2, sizeof(*e));
		if (!e || pipe(ab) < 0 || pipe(ba) < 0) {
			perror("pipe");
			return 1;
		}
		e[0].in = ba[0];
		e[0].out = ab[1];
		e[1].in = ab[0];
		e[1].out = ba[1];
		if (pthread_create(&t, NULL, pipe_main, &e[0]) ||
		    pthread_create(&t, NULL, pipe_main, &e[1])) {
			perror("pthread_create");
			return 1;
		}
		if (write(ba[1], "x", 1) != 1)
			return 1;
	}
	while (started < ncalc + 2 * npairs)
		usleep(1000);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	pause();
	return 0;
}
