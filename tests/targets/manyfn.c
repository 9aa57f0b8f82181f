/*
 * manyfn — four hot functions of different weights, for profiles of a
 * stripped binary (tests/e2e/t_stripped.sh builds on manyfn-stripped, no
 * .symtab): spin_a() about 40% of the thread "spinner", spin_b() 30%,
 * spin_c() 20%, spin_d() 10%. They are static and noinline, so only their
 * FDEs tell them apart once the symbols are gone.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static volatile uint64_t sink;

#define SPIN(name, n)                                                      \
	static __attribute__((noinline)) uint64_t name(uint64_t x)          \
	{                                                                   \
		for (int i = 0; i < (n); i++)                               \
			x = x * 2862933555777941757ull + 3037000493ull;     \
		return x;                                                   \
	}

SPIN(spin_a, 4000)
SPIN(spin_b, 3000)
SPIN(spin_c, 2000)
SPIN(spin_d, 1000)

static void *spinner(void *arg)
{
	uint64_t x = 1;

	(void)arg;
	pthread_setname_np(pthread_self(), "spinner");
	for (;;) {
		x = spin_a(x);
		x = spin_b(x);
		x = spin_c(x);
		x = spin_d(x);
		sink = x;
	}
	return NULL;
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, NULL, spinner, NULL);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
