/*
 * evloop — a test target shaped like an event loop: each "loop" thread
 * handles a request in handle_request() for about WORK_US of its own CPU,
 * then waits about WAIT_US in wait_for_event() (clock_nanosleep), thousands
 * of times a second. The thread measures its handler's CPU itself with
 * CLOCK_THREAD_CPUTIME_ID around the handler, and prints, on each SIGUSR1
 * (also at start, as "ready"), one line per loop thread:
 *   loop TID HANDLER_NS THREAD_NS
 * so a test can take the truth over exactly its own window. Optional "busy"
 * threads spin in busy_spin() all the time, to share the CPUs.
 *
 * Usage: evloop [LOOPS [BUSY [WORK_US [WAIT_US [POLL_FDS]]]]]   (defaults 1 0 100 150 0)
 *
 * With POLL_FDS, the wait is a ppoll() of that many idle pipes (timing out
 * after WAIT_US), which costs the kernel CPU in proportion to them before
 * the sleep and after it (scan, queue, scan again, unqueue): a server
 * polling many descriptors, or any call that works, sleeps and works.
 *
 * The handler reads the monotonic clock (in the vDSO) every few thousand
 * iterations, so nearly all of its samples land in handle_request() itself. Built -O2, no frame
 * pointers, like the other targets.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_LOOPS 16

void handle_request(long work_ns);
void wait_for_event(long wait_ns);
void busy_spin(void);

struct loop {
	pid_t tid;
	volatile long long handler_ns;
};

static struct loop loops[MAX_LOOPS];
static int nloops = 1, nbusy, work_us = 100, wait_us = 150, npoll;
static struct pollfd *pollfds; /* shared: read ends of idle pipes, never ready */
static volatile unsigned long sink;
static volatile sig_atomic_t report;

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/*
 * Works for work_ns of wall time, reading the clock every ~0.6 us of work.
 * The monotonic clock is read in the vDSO (~25 ns): a thread's CPU clock
 * is a system call, which on a VM with page-table isolation cost 1.3 us,
 * twice the work between reads, and put most of the handler in the kernel.
 */
__attribute__((noinline)) void handle_request(long work_ns)
{
	long long end = mono_ns() + work_ns;
	unsigned i;

	do
		for (i = 0; i < 2000; i++)
			sink += i;
	while (mono_ns() < end);
}

__attribute__((noinline)) void wait_for_event(long wait_ns)
{
	struct timespec ts = { 0, wait_ns };

	if (npoll)
		ppoll(pollfds, (nfds_t)npoll, &ts, NULL);
	else
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

__attribute__((noinline)) void busy_spin(void)
{
	unsigned i;

	for (;;)
		for (i = 0; i < 100000; i++)
			sink += i;
}

static void *loop_main(void *arg)
{
	struct loop *l = arg;
	long long a;

	pthread_setname_np(pthread_self(), "loop");
	l->tid = (pid_t)syscall(SYS_gettid);
	for (;;) {
		a = cpu_ns();
		handle_request(work_us * 1000l);
		l->handler_ns += cpu_ns() - a;
		wait_for_event(wait_us * 1000l);
	}
	return NULL;
}

static void *busy_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "busy");
	busy_spin();
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	report = 1;
}

static long long thread_cpu(pid_t tid)
{
	char p[64];
	long long ns = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/self/task/%d/schedstat", (int)tid);
	if ((f = fopen(p, "r"))) {
		if (fscanf(f, "%lld", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

static void print_loops(const char *head)
{
	int i;

	if (head)
		printf("%s %d\n", head, (int)getpid());
	for (i = 0; i < nloops; i++)
		printf("loop %d %lld %lld\n", (int)loops[i].tid, loops[i].handler_ns,
		       thread_cpu(loops[i].tid));
	printf("end\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	pthread_t t;
	sigset_t usr1;
	int i;

	if (argc > 1)
		nloops = atoi(argv[1]);
	if (argc > 2)
		nbusy = atoi(argv[2]);
	if (argc > 3)
		work_us = atoi(argv[3]);
	if (argc > 4)
		wait_us = atoi(argv[4]);
	if (argc > 5)
		npoll = atoi(argv[5]);
	if (nloops < 1 || nloops > MAX_LOOPS || nbusy < 0 || nbusy > 64 || work_us < 1 ||
	    wait_us < 1 || wait_us > 999999 || npoll < 0 || npoll > 450) {
		fprintf(stderr, "usage: evloop [LOOPS [BUSY [WORK_US [WAIT_US [POLL_FDS]]]]]\n");
		return 2;
	}
	if (npoll && !(pollfds = calloc((size_t)npoll, sizeof(*pollfds)))) {
		perror("calloc");
		return 1;
	}
	for (i = 0; i < npoll; i++) {
		int p[2];

		if (pipe(p)) {
			perror("pipe");
			return 1;
		}
		pollfds[i].fd = p[0];
		pollfds[i].events = POLLIN;
	}
	signal(SIGUSR1, on_usr1);
	/* Only the main thread takes SIGUSR1: the loops' sleeps stay whole. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	for (i = 0; i < nloops; i++)
		if (pthread_create(&t, NULL, loop_main, &loops[i])) {
			perror("pthread_create");
			return 1;
		}
	for (i = 0; i < nbusy; i++)
		if (pthread_create(&t, NULL, busy_main, NULL)) {
			perror("pthread_create");
			return 1;
		}
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	for (i = 0; i < nloops; i++)
		while (!loops[i].tid)
			usleep(1000);
	print_loops("ready");
	for (;;) {
		pause();
		if (report) {
			report = 0;
			print_loops(NULL);
		}
	}
}
