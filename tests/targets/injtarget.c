/*
 * injtarget — the target of the injection tests (t_inject*.sh): threads
 * that would notice a remote call done wrong. Invariant: every thread
 * checks what it gets back; the report ("end" line, on SIGUSR1 and at
 * SIGTERM) counts every surprise, so a test passes only on all zeros.
 *
 *  - 8 threads ("alloc") allocate and free at a high rate, each block
 *    filled with a pattern its owner checks before freeing (checksum);
 *  - "epoll" waits 100 ms in epoll_wait on an empty set, "nsleep" sleeps
 *    50 ms in nanosleep: each return must be the timeout, never EINTR, and
 *    each wait's overshoot is recorded (a restart in full shows here);
 *  - "futex" waits without a timeout on a word the main thread bumps every
 *    20 ms; "piperd" reads a pipe the main thread writes every 20 ms;
 *  - with --hold MS, "minfo" calls malloc_info() into a full pipe and so
 *    sleeps in write() under malloc_info's frames until "drain" empties
 *    the pipe after MS;
 *  - on SIGUSR2 the main thread allocates GROW_BYTES in blocks of 1..64 KiB
 *    from grow_heap() and keeps them: "grown BYTES" (the truth a heap
 *    profile of allocations since injection is checked against);
 *  - --seccomp 1 installs an allow-all seccomp filter (a refusal to test);
 *  - injectee_slow(ms) spins for ms milliseconds (a remote call the tests
 *    kill cprof-attach during); its address is printed at start.
 *
 * Usage: injtarget [--hold MS] [--alloc N] [--seccomp 1]; prints "fn 0xADDR" and "ready".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 256

static atomic_ulong eintrs, bad_returns, checksum_errors, allocs, slow_calls, slow_started;
static atomic_ulong epoll_over_max_us, nsleep_over_max_us, waits;
/* Since the last report: the overshoot of each timed wait, summed, and the waits. */
static atomic_ulong epoll_over_sum_us, epoll_n, nsleep_over_sum_us, nsleep_n;
static atomic_uint futex_word;
static int pipe_rw[2];
static volatile sig_atomic_t report_wanted, stop_wanted, grow_wanted;
static int hold_ms;

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void max_store(atomic_ulong *m, unsigned long v)
{
	unsigned long o = atomic_load(m);

	while (v > o && !atomic_compare_exchange_weak(m, &o, v))
		;
}

long injectee_slow(long ms);

/* The remote call the kill test interrupts: a busy loop of ms milliseconds. */
__attribute__((noinline, used)) long injectee_slow(long ms)
{
	uint64_t end = mono_us() + (uint64_t)ms * 1000u;
	volatile unsigned long x = 0;

	atomic_fetch_add(&slow_started, 1);
	while (mono_us() < end)
		x++;
	atomic_fetch_add(&slow_calls, 1);
	return (long)x;
}

static unsigned char pattern(unsigned slot, unsigned gen, size_t i)
{
	return (unsigned char)(slot * 31u + gen * 7u + i);
}

static void *alloc_main(void *arg)
{
	unsigned char *p[SLOTS] = { 0 };
	size_t n[SLOTS] = { 0 };
	unsigned gen[SLOTS] = { 0 }, seed = (unsigned)(uintptr_t)arg * 2654435761u;

	while (!stop_wanted) {
		unsigned s = (seed = seed * 1103515245u + 12345u) >> 8 & (SLOTS - 1);
		size_t i;

		if (p[s]) {
			for (i = 0; i < n[s]; i += 61)
				if (p[s][i] != pattern(s, gen[s], i)) {
					atomic_fetch_add(&checksum_errors, 1);
					break;
				}
			free(p[s]);
			p[s] = NULL;
			continue;
		}
		n[s] = 16 + (seed >> 4) % 4000;
		if (!(p[s] = malloc(n[s])))
			continue;
		gen[s]++;
		for (i = 0; i < n[s]; i += 61)
			p[s][i] = pattern(s, gen[s], i);
		atomic_fetch_add(&allocs, 1);
	}
	for (unsigned s = 0; s < SLOTS; s++)
		free(p[s]);
	return NULL;
}

static void *epoll_main(void *arg)
{
	int ep = epoll_create1(0);
	struct epoll_event ev;

	(void)arg;
	while (!stop_wanted) {
		uint64_t t0 = mono_us(), dt;
		int r = epoll_wait(ep, &ev, 1, 100);

		dt = mono_us() - t0;
		if (r < 0 && errno == EINTR)
			atomic_fetch_add(&eintrs, 1);
		else if (r != 0)
			atomic_fetch_add(&bad_returns, 1);
		if (r == 0 && dt > 100000)
			max_store(&epoll_over_max_us, dt - 100000);
		if (r == 0) {
			atomic_fetch_add(&epoll_over_sum_us, dt > 100000 ? dt - 100000 : 0);
			atomic_fetch_add(&epoll_n, 1);
		}
		atomic_fetch_add(&waits, 1);
	}
	return NULL;
}

static void *nsleep_main(void *arg)
{
	(void)arg;
	while (!stop_wanted) {
		struct timespec ts = { 0, 50000000 };
		uint64_t t0 = mono_us(), dt;
		int r = nanosleep(&ts, NULL);

		dt = mono_us() - t0;
		if (r < 0 && errno == EINTR)
			atomic_fetch_add(&eintrs, 1);
		else if (r != 0)
			atomic_fetch_add(&bad_returns, 1);
		if (r == 0 && dt > 50000)
			max_store(&nsleep_over_max_us, dt - 50000);
		if (r == 0) {
			atomic_fetch_add(&nsleep_over_sum_us, dt > 50000 ? dt - 50000 : 0);
			atomic_fetch_add(&nsleep_n, 1);
		}
		atomic_fetch_add(&waits, 1);
	}
	return NULL;
}

static void *futex_main(void *arg)
{
	(void)arg;
	while (!stop_wanted) {
		unsigned v = atomic_load(&futex_word);
		long r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);

		if (r < 0 && errno == EINTR)
			atomic_fetch_add(&eintrs, 1);
		else if (r < 0 && errno != EAGAIN)
			atomic_fetch_add(&bad_returns, 1);
		atomic_fetch_add(&waits, 1);
	}
	return NULL;
}

static void *piperd_main(void *arg)
{
	char c;

	(void)arg;
	while (!stop_wanted) {
		ssize_t r = read(pipe_rw[0], &c, 1);

		if (r < 0 && errno == EINTR)
			atomic_fetch_add(&eintrs, 1);
		else if (r != 1)
			atomic_fetch_add(&bad_returns, 1);
		atomic_fetch_add(&waits, 1);
	}
	return NULL;
}

static int minfo_pipe[2];

static void *minfo_main(void *arg)
{
	FILE *f;
	char junk[4096];

	(void)arg;
	memset(junk, 'x', sizeof(junk));
	fcntl(minfo_pipe[1], F_SETFL, O_NONBLOCK);
	while (write(minfo_pipe[1], junk, sizeof(junk)) > 0)
		;
	fcntl(minfo_pipe[1], F_SETFL, 0);
	f = fdopen(minfo_pipe[1], "w");
	setvbuf(f, NULL, _IONBF, 0); /* every fprintf of malloc_info writes: it blocks inside */
	printf("minfo %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	if (malloc_info(0, f) != 0)
		atomic_fetch_add(&bad_returns, 1);
	fclose(f);
	return NULL;
}

static void *drain_main(void *arg)
{
	char buf[65536];

	(void)arg;
	usleep((useconds_t)hold_ms * 1000u);
	while (read(minfo_pipe[0], buf, sizeof(buf)) > 0)
		;
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	report_wanted = 1;
}

#define GROW_BYTES (64u << 20)

static void on_usr2(int sig)
{
	(void)sig;
	grow_wanted = 1;
}

/* Allocate GROW_BYTES in blocks of 1..64 KiB, kept for ever: the heap's known truth. */
__attribute__((noinline)) static size_t grow_heap(void)
{
	static unsigned seed = 12345;
	size_t total = 0;

	while (total < GROW_BYTES) {
		size_t n = 1 + ((seed = seed * 1103515245u + 12345u) >> 8) % 65536;
		char *p = malloc(n);

		if (!p)
			break;
		p[0] = p[n - 1] = 1;
		total += n;
	}
	return total;
}

static void on_term(int sig)
{
	(void)sig;
	stop_wanted = 1;
}

static void report(void)
{
	unsigned long en = atomic_exchange(&epoll_n, 0), es = atomic_exchange(&epoll_over_sum_us, 0);
	unsigned long nn = atomic_exchange(&nsleep_n, 0), ns = atomic_exchange(&nsleep_over_sum_us, 0);

	printf("waits epoll_n=%lu epoll_over_mean_us=%lu nsleep_n=%lu nsleep_over_mean_us=%lu\n", en,
	       en ? es / en : 0, nn, nn ? ns / nn : 0);
	printf("end allocs=%lu eintr=%lu bad=%lu checksum_errors=%lu epoll_over_max_us=%lu "
	       "nsleep_over_max_us=%lu waits=%lu slow_started=%lu slow_calls=%lu\n",
	       atomic_load(&allocs), atomic_load(&eintrs), atomic_load(&bad_returns),
	       atomic_load(&checksum_errors), atomic_load(&epoll_over_max_us),
	       atomic_load(&nsleep_over_max_us), atomic_load(&waits), atomic_load(&slow_started), atomic_load(&slow_calls));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	pthread_t th[16];
	int nth = 0, nalloc = 8, i, seccomp = 0;
	struct sigaction sa;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--hold"))
			hold_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--alloc"))
			nalloc = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--seccomp"))
			seccomp = atoi(argv[i + 1]);
	}
	if (nalloc > 8)
		nalloc = 8;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1; /* no SA_RESTART: a broken wait would show as EINTR */
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	if (seccomp) {
		struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		struct sock_fprog prog = { 1, &allow };

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
			return 1;
	}
	if (pipe(pipe_rw) < 0 || pipe(minfo_pipe) < 0)
		return 1;
	printf("fn %p\n", (void *)injectee_slow);
	/* The workers never take our signals: their waits must end only as asked. */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &sa.sa_mask, NULL);
	for (i = 0; i < nalloc; i++)
		pthread_create(&th[nth++], NULL, alloc_main, (void *)(uintptr_t)(i + 1));
	pthread_create(&th[nth++], NULL, epoll_main, NULL);
	pthread_create(&th[nth++], NULL, nsleep_main, NULL);
	pthread_create(&th[nth++], NULL, futex_main, NULL);
	pthread_create(&th[nth++], NULL, piperd_main, NULL);
	if (hold_ms > 0) {
		pthread_create(&th[nth++], NULL, minfo_main, NULL);
		pthread_create(&th[nth++], NULL, drain_main, NULL);
	}
	{
		static const char *names[] = { "epoll", "nsleep", "futex", "piperd", "minfo", "drain" };

		for (i = 0; i < nth; i++)
			pthread_setname_np(th[i], i < nalloc ? "alloc" : names[i - nalloc]);
	}
	pthread_sigmask(SIG_UNBLOCK, &sa.sa_mask, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (!stop_wanted) {
		struct timespec ts = { 0, 20000000 };

		nanosleep(&ts, NULL); /* EINTR here is our own signals' */
		atomic_fetch_add(&futex_word, 1);
		syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		if (write(pipe_rw[1], "x", 1) != 1)
			atomic_fetch_add(&bad_returns, 1);
		if (grow_wanted) {
			grow_wanted = 0;
			printf("grown %zu\n", grow_heap());
			fflush(stdout);
		}
		if (report_wanted) {
			report_wanted = 0;
			report();
		}
	}
	/* Wake the sleepers so that they see stop_wanted. */
	atomic_fetch_add(&futex_word, 1);
	syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 8, NULL, NULL, 0);
	if (write(pipe_rw[1], "x", 1) < 0)
		return 1;
	for (i = 0; i < nth; i++)
		if (hold_ms <= 0 || i < nth - 2)
			pthread_join(th[i], NULL);
	report();
	printf("done\n");
	return 0;
}
