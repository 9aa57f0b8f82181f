/*
 * labelmisuse — a program that uses include/cprof.h past its limits, for
 * t_labels: one push of 10 pairs (the first 8 keys are kept: thread, i,
 * a to f), a 100-byte value (i, cut to 63), a key the attacher keeps for
 * itself ("thread": left out of the samples), and a pop without a push. Then it waits in hold() with the labels in force and prints
 * "ready PID active=0|1".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cprof.h>

void hold(void);

__attribute__((noinline)) void hold(void)
{
	for (;;)
		pause();
}

int main(void)
{
	char big[101];

	memset(big, 'v', 100);
	big[100] = 0;
	cprof_labels_pop(); /* without a push: counted, labels unchanged */
	cprof_labels_push("thread", "mine", "i", big, "a", "1", "b", "2", "c", "3", "d", "4", "e",
			  "5", "f", "6", "g", "7", "j", "10", NULL);
	printf("ready %d active=%d\n", (int)getpid(), cprof_labels_active());
	fflush(stdout);
	hold();
}
