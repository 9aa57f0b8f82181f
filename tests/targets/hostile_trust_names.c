/*
 * hostile_trust_names — a target whose names are escape sequences meant
 * for the terminal of whoever profiles it: the main thread's name (comm)
 * and a "spinner" thread's name hold ESC sequences (set with prctl and
 * pthread_setname_np, as any program may), and the spinner burns CPU in a
 * function whose ELF symbol holds one too (a symbol may be any bytes but
 * NUL). The main thread sleeps in nanosleep(), so its stack runs through
 * libc (the line-cache test profiles it with a forged libc). Prints
 * "ready PID" once the names are set.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* Reached by a normal name, run under the hostile one: the samples' leaf is "evil\e[31mspin". */
void evil_spin(unsigned long n);
__asm__(".text\n"
	".globl evil_spin\n.type evil_spin, @function\n"
	"evil_spin: jmp \"evil\033[31mspin\"\n.size evil_spin, .-evil_spin\n"
	".globl \"evil\033[31mspin\"\n"
	".type \"evil\033[31mspin\", @function\n"
	"\"evil\033[31mspin\":\n"
	"1: dec %rdi\n jnz 1b\n ret\n"
	".size \"evil\033[31mspin\", .-\"evil\033[31mspin\"\n");

static void *spinner(void *arg)
{
	(void)arg;
	for (;;)
		evil_spin(100000000ul);
	return NULL;
}

int main(void)
{
	struct timespec ts = { 0, 50000000 };
	pthread_t t;

	/* 15 bytes at most: ESC [2J clears the screen, ESC ]0; sets a title. */
	prctl(PR_SET_NAME, "\033[2J\033[31mEVIL", 0, 0, 0);
	if (pthread_create(&t, NULL, spinner, NULL))
		return 1;
	pthread_setname_np(t, "\033]0;pwned\007");
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		nanosleep(&ts, NULL);
}
