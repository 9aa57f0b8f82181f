/*
 * holeyframe — a test target whose threads spin under a large stack frame
 * that is touched only at its lowest bytes, as a server's request handler
 * with a 16 KiB header buffer or an iovec array is: the frame's upper
 * pages were never faulted in, and the kernel's copy of the user stack for
 * a perf sample ends at the first of them, below the callers' frames.
 *
 * Each thread runs holey_outer -> holey_middle -> holey_frame, whose
 * frame holds a 16 KiB buffer of which only the lowest 64 bytes are ever
 * written, and spins in holey_spin beneath it. A
 * fresh thread's stack is a fresh mapping, so nothing else touched those
 * pages. Built without stack-clash probing (the Makefile's rule for this
 * target), which would touch every page of the frame.
 *
 * Usage: holeyframe [THREADS]   (default 2)
 * Prints "ready" once the threads run; runs until killed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void holey_spin(volatile char *low);
void holey_frame(void);
void holey_middle(void);
void holey_outer(void);

static volatile unsigned long sink;
static volatile int never; /* 0: keeps the buffer's last byte a live store the compiler keeps */

__attribute__((noinline)) void holey_spin(volatile char *low)
{
	unsigned i;

	for (;;)
		for (i = 0; i < 100000; i++)
			sink += (unsigned long)low[i & 63] + i;
}

/* Only buf[0..63] is written: the pages above them stay unmapped. */
__attribute__((noinline)) void holey_frame(void)
{
	volatile char buf[16 * 1024];
	int i;

	for (i = 0; i < 64; i++)
		buf[i] = (char)i;
	if (never)
		buf[sizeof(buf) - 1] = 0;
	holey_spin(buf);
}

__attribute__((noinline)) void holey_middle(void)
{
	holey_frame();
	sink++;
}

__attribute__((noinline)) void holey_outer(void)
{
	holey_middle();
	sink++;
}

static void *holey_main(void *arg)
{
	(void)arg;
	holey_outer();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	pthread_t t;
	int i, n = argc > 1 ? atoi(argv[1]) : 2;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	for (i = 0; i < n; i++)
		if (pthread_create(&t, &attr, holey_main, NULL) != 0)
			return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
