/*
 * runexit — a test target for `cprof-attach run`: it keeps 4 MiB in
 * keep_site() (256 blocks of 16 KiB, never freed), allocates and frees
 * 16 MiB in churn_site() (1024 blocks of 16 KiB), then, by its mode:
 *   exit       returns 7 from main (the exit handshake, a status to pass on);
 *   loop FILE  creates FILE (ready), then spins in spin() until a signal
 *              ends it (SIGINT's default action, or SIGTERM's);
 *   handle FILE as loop, but SIGINT makes it run finish() (a fixed 2^28
 *              rounds of work, some 0.3 s of CPU: samples for a cpu
 *              capture running by then, whatever the machine's load) and
 *              return 9 from main;
 *   sigdfl     returns 0 when sigaction(2) reports SIGINT, SIGTERM and
 *              SIGHUP at their default action, as the program was started
 *              (run's handler must not show), else 8.
 * Each block is written to, so it is really used.
 *
 * Usage: runexit exit | runexit loop FILE | runexit handle FILE | runexit sigdfl
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (16u << 10)
#define KEPT 256
#define CHURNED 1024

void keep_site(void);
void churn_site(void);
void spin(void);
void finish(void);

static void *kept[KEPT];
static volatile sig_atomic_t stop;
volatile unsigned long spun;
void *volatile churn_sink; /* so the compiler keeps each malloc and free */

__attribute__((noinline)) void keep_site(void)
{
	int i;

	for (i = 0; i < KEPT; i++) {
		kept[i] = malloc(BLOCK);
		if (kept[i])
			memset(kept[i], i, BLOCK);
	}
}

__attribute__((noinline)) void churn_site(void)
{
	void *p;
	int i;

	for (i = 0; i < CHURNED; i++) {
		p = malloc(BLOCK);
		if (p)
			memset(p, i, 64);
		churn_sink = p;
		free(churn_sink);
	}
}

__attribute__((noinline)) void spin(void)
{
	while (!stop)
		spun++;
}

__attribute__((noinline)) void finish(void)
{
	unsigned long i;

	for (i = 0; i < (1ul << 28); i++)
		spun++;
}

static void on_int(int sig)
{
	(void)sig;
	stop = 1;
}

static int sigdfl(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction old;
	unsigned i;

	for (i = 0; i < 3; i++)
		if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
			return 8;
	return 0;
}

int main(int argc, char **argv)
{
	int fd;

	if (argc == 2 && !strcmp(argv[1], "sigdfl"))
		return sigdfl();
	if (argc < 2 || (strcmp(argv[1], "exit") && argc < 3)) {
		fprintf(stderr, "usage: runexit exit | loop FILE | handle FILE | sigdfl\n");
		return 2;
	}
	keep_site();
	churn_site();
	if (!strcmp(argv[1], "exit"))
		return 7;
	if (!strcmp(argv[1], "handle"))
		signal(SIGINT, on_int);
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 2;
	close(fd);
	spin();
	finish();
	return 9;
}
