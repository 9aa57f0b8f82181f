/*
 * altstack — a test target whose hot code runs on an alternate signal
 * stack. Built with -O2 and without frame pointers, so only DWARF CFI
 * unwinds it.
 *
 * Threads "altmmap" and "altheap" each install a sigaltstack — a small
 * anonymous mapping of its own for altmmap, a malloc'd block (inside the
 * heap, or an mmap'd chunk of malloc) for altheap — and spin in
 * alt_victim() three calls deep; a thread CPU-time timer interrupts each
 * every 4 ms with SIGPROF, whose SA_ONSTACK handler spins in
 * alt_handler_spin() for 2 ms of the thread's CPU: half of its time. So the leaf
 * frames live on the alternate stack and the interrupted ones
 * (alt_victim, alt_middle, alt_outer, the thread's start) on the thread's
 * normal stack. Thread "altsleep" does the same with SIGUSR2, whose
 * handler sleeps in alt_handler_sleep() (nanosleep, 50 ms) on an mmap'd
 * alternate stack: mostly asleep there, so it is read without a stop. main
 * sleeps in pause() without an alternate stack.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ALT_SIZE (64 * 1024)

void alt_handler_spin(void);
void alt_handler_sleep(void);
void alt_victim(void);
void alt_middle(void);
void alt_outer(void);

static volatile unsigned long sink;

static void burn(unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		sink += i;
}

static unsigned long long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/*
 * 2 ms of the thread's CPU, whatever the machine's speed or load: with the
 * timer's 4 ms, half of the thread's CPU is here (a fixed count of
 * iterations is a share that depends on the machine, too small on some
 * for a loaded run to have handler samples enough to judge).
 */
__attribute__((noinline)) void alt_handler_spin(void)
{
	unsigned long long t0 = thread_cpu_ns();

	do
		burn(200000);
	while (thread_cpu_ns() - t0 < 2000000ull);
}

static void on_prof(int sig)
{
	(void)sig;
	alt_handler_spin();
}

__attribute__((noinline)) void alt_handler_sleep(void)
{
	struct timespec ts = { 0, 50000000 };

	nanosleep(&ts, NULL);
	sink++;
}

static void on_usr2(int sig)
{
	(void)sig;
	alt_handler_sleep();
}

__attribute__((noinline)) void alt_victim(void)
{
	for (;;)
		burn(1000);
}

__attribute__((noinline)) void alt_middle(void)
{
	alt_victim();
	sink++;
}

__attribute__((noinline)) void alt_outer(void)
{
	alt_middle();
	sink++;
}

/* Give the calling thread an alternate stack at mem and a 4 ms CPU timer raising sig. */
static void alt_setup(void *mem, int sig, const char *what)
{
	struct sigevent sev;
	struct itimerspec its;
	timer_t timer;
	stack_t ss;

	memset(&ss, 0, sizeof(ss));
	ss.ss_sp = mem;
	ss.ss_size = ALT_SIZE;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sig;
	sev._sigev_un._tid = gettid();
	memset(&its, 0, sizeof(its));
	its.it_value.tv_nsec = 4000000;
	its.it_interval.tv_nsec = 4000000;
	/* Without its alternate stack and timer this thread would test nothing. */
	if (!mem || sigaltstack(&ss, NULL) != 0 ||
	    timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &timer) != 0 ||
	    timer_settime(timer, 0, &its, NULL) != 0) {
		fprintf(stderr, "altstack: %s: cannot set up its signal stack and timer\n", what);
		exit(1);
	}
}

static void *altmmap_main(void *arg)
{
	void *mem = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	pthread_setname_np(pthread_self(), "altmmap");
	alt_setup(mem == MAP_FAILED ? NULL : mem, SIGPROF, "altmmap");
	alt_outer();
	return NULL;
}

static void *altsleep_main(void *arg)
{
	void *mem = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	pthread_setname_np(pthread_self(), "altsleep");
	alt_setup(mem == MAP_FAILED ? NULL : mem, SIGUSR2, "altsleep");
	alt_outer();
	return NULL;
}

static void *altheap_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "altheap");
	alt_setup(malloc(ALT_SIZE), SIGPROF, "altheap");
	alt_outer();
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	pthread_t t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART | SA_ONSTACK;
	sigaction(SIGPROF, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	if (pthread_create(&t, NULL, altmmap_main, NULL) ||
	    pthread_create(&t, NULL, altheap_main, NULL) ||
	    pthread_create(&t, NULL, altsleep_main, NULL)) {
		perror("pthread_create");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}
