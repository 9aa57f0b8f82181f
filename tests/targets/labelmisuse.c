/*
 * labelmisuse — a program that uses include/cprof.h past its limits, for
 * t_labels: one push of 10 pairs (the first 8 keys are kept: thread, i,
 * a to f), a 100-byte value (i, cut to 63), a key the attacher keeps for
 * itself ("thread": left out of the samples), and a pop without a push. Then it waits in hold() with the labels in force and prints
 * "ready PID active=0|1".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cprof.h>

void hold(void);
void *keep_block(size_t n);

__attribute__((noinline)) void *keep_block(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}

__attribute__((noinline)) void hold(void)
{
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	static void *volatile kept[2];

	(void)kept[0];
	char big[101];
	pid_t child;

	memset(big, 'v', 100);
	big[100] = 0;
	cprof_labels_pop(); /* without a push: counted, labels unchanged */
	cprof_labels_push("thread", "mine", "i", big, "a", "1", "b", "2", "c", "3", "d", "4", "e",
			  "5", "f", "6", "g", "7", "j", "10", NULL);
	printf("ready %d active=%d\n", (int)getpid(), cprof_labels_active());
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "-f")) {
		kept[0] = keep_block(4u << 20);
		child = fork();
		if (child == 0) {
			cprof_labels_push("a", "child", NULL); /* the set is full: a key it has */
			kept[1] = keep_block(2u << 20);
			printf("child %d\n", (int)getpid());
			fflush(stdout);
		}
	}
	hold();
}
