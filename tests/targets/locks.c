/*
 * locks — a test target with known contention, for the block and mutex
 * profiles of libcprof.so. Threads and the functions they wait or release
 * in:
 *
 *   holder       takes mutex M in holder_acquire(), keeps it ~HOLD_US
 *                (sleeping) in holder_hold() and releases it in
 *                holder_release(), then rests HOLD_US / 4
 *   2 waiters    take M in waiter_take(), do ~10 us of work, release it
 *                there, rest ~HOLD_US / 2
 *   cond waiter  waits on condition variable C (mutex CM) in cond_waiter()
 *   timed waiter the same in cond_waiter_timed() with 2 ms timeouts
 *                (about half of them time out)
 *   sem waiter   waits on semaphore S in sem_waiter()
 *   signaller    every 3 ms: takes CM in signal_tick(), broadcasts C,
 *                releases CM, posts S
 *
 * Every wait is timed by the thread itself (CLOCK_MONOTONIC around each
 * pthread_mutex_lock, pthread_cond_wait, sem_wait...; uncontended calls
 * included), per waiting function ("site") and, for pthread_mutex_lock,
 * per mutex. It prints "ready PID" at start, and on each SIGUSR1 (and at
 * the end with -s):
 *   wait SITE COUNT NS       every wait made in SITE so far
 *   lockwait LOCK COUNT NS   the pthread_mutex_lock calls on LOCK (M, CM)
 *   end
 * With -s SECONDS the threads stop after that long, main joins them in
 * stop_all() (timed too), prints the lines and "done", and waits to be
 * killed, so the shim's segment holds exactly what the lines count. With
 * -f, before anything else, main forks while it holds a mutex that two
 * threads wait for; the child releases and retakes it, contends on it
 * with a thread of its own, waits on a condition variable, and exits 0
 * ("fork ok" or "fork FAILED").
 *
 * With -l EVERY, every EVERY-th hold of the holder lasts 50 ms instead,
 * as on a loaded machine where the holder waits for a CPU: a few releases
 * carry much of the waiting.
 *
 * Usage: locks [-s SECONDS] [-h HOLD_US] [-l EVERY] [-f]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { S_HOLDER, S_WAITER, S_COND, S_COND_TIMED, S_SEM, S_SIGNAL, S_STOP, S_FORK, NSITES };
static const char *const site_name[NSITES] = {
	"holder_acquire", "waiter_take", "cond_waiter", "cond_waiter_timed",
	"sem_waiter", "signal_tick", "stop_all", "fork_hold",
};
enum { L_M, L_CM, NLOCKS };
static const char *const lock_name[NLOCKS] = { "M", "CM" };

struct tally {
	atomic_ullong count, ns;
};
static struct tally sites[NSITES], locks[NLOCKS];

static pthread_mutex_t M = PTHREAD_MUTEX_INITIALIZER, CM = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t C = PTHREAD_COND_INITIALIZER;
static sem_t S;
static unsigned long gen;
static atomic_int stop;
static long hold_us = 1000;
static unsigned long long_every; /* -l: every long_every-th hold lasts 50 ms */
static volatile unsigned long sink;
static volatile sig_atomic_t report;

void holder_acquire(void);
void holder_hold(void);
void holder_release(void);
void waiter_take(void);
void cond_waiter(void);
void cond_waiter_timed(void);
void sem_waiter(void);
void signal_tick(void);
void stop_all(pthread_t *t, int n);
void fork_hold(void);

/* After a call that must keep its own return address (no tail call). */
#define NO_TAIL_CALL() __asm__ volatile("" ::: "memory")

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void tally(struct tally *t, unsigned long long d)
{
	atomic_fetch_add(&t->count, 1);
	atomic_fetch_add(&t->ns, d);
}

/* Inlined: pthread_mutex_lock's caller must be the site itself. */
static inline __attribute__((always_inline)) void timed_lock(int site, int lock,
							     pthread_mutex_t *m)
{
	unsigned long long t0 = now_ns(), d;

	pthread_mutex_lock(m);
	d = now_ns() - t0;
	tally(&sites[site], d);
	tally(&locks[lock], d);
}

static void rest_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static void spin_us(long us)
{
	unsigned long long end = now_ns() + (unsigned long long)us * 1000;
	unsigned i;

	while (now_ns() < end)
		for (i = 0; i < 100; i++)
			sink += i;
}

__attribute__((noinline)) void holder_acquire(void)
{
	timed_lock(S_HOLDER, L_M, &M);
}

/* With -l EVERY, every EVERY-th hold lasts 50 ms: a holder kept off a CPU. */
__attribute__((noinline)) void holder_hold(void)
{
	static unsigned long holds;

	rest_us(long_every && ++holds % long_every == 0 ? 50000 : hold_us);
}

__attribute__((noinline)) void holder_release(void)
{
	pthread_mutex_unlock(&M);
	NO_TAIL_CALL();
}

static void *holder_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		holder_acquire();
		holder_hold();
		holder_release();
		rest_us(hold_us / 4);
	}
	return NULL;
}

__attribute__((noinline)) void waiter_take(void)
{
	timed_lock(S_WAITER, L_M, &M);
	spin_us(10);
	pthread_mutex_unlock(&M);
	NO_TAIL_CALL();
}

static void *waiter_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		waiter_take();
		rest_us(hold_us / 2);
	}
	return NULL;
}

/* Waits for the signaller's next round (or its timeout, timed). */
static inline __attribute__((always_inline)) void cond_round(int site, int timed)
{
	unsigned long long t0, seen;
	struct timespec abs;

	timed_lock(site, L_CM, &CM);
	seen = gen;
	while (gen == seen && !atomic_load(&stop)) {
		t0 = now_ns();
		if (timed) {
			clock_gettime(CLOCK_REALTIME, &abs);
			abs.tv_nsec += 2000000;
			if (abs.tv_nsec >= 1000000000) {
				abs.tv_nsec -= 1000000000;
				abs.tv_sec++;
			}
			if (pthread_cond_timedwait(&C, &CM, &abs) == ETIMEDOUT) {
				tally(&sites[site], now_ns() - t0);
				break;
			}
		} else {
			pthread_cond_wait(&C, &CM);
		}
		tally(&sites[site], now_ns() - t0);
	}
	pthread_mutex_unlock(&CM);
	NO_TAIL_CALL();
}

__attribute__((noinline)) void cond_waiter(void)
{
	cond_round(S_COND, 0);
}

__attribute__((noinline)) void cond_waiter_timed(void)
{
	cond_round(S_COND_TIMED, 1);
}

static void *cond_main(void *arg)
{
	while (!atomic_load(&stop)) {
		if (arg)
			cond_waiter_timed();
		else
			cond_waiter();
	}
	return NULL;
}

__attribute__((noinline)) void sem_waiter(void)
{
	unsigned long long t0 = now_ns();

	while (sem_wait(&S) != 0 && errno == EINTR)
		;
	tally(&sites[S_SEM], now_ns() - t0);
}

static void *sem_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		sem_waiter();
	return NULL;
}

__attribute__((noinline)) void signal_tick(void)
{
	timed_lock(S_SIGNAL, L_CM, &CM);
	gen++;
	pthread_cond_broadcast(&C);
	pthread_mutex_unlock(&CM);
	sem_post(&S);
	NO_TAIL_CALL();
}

static void *signal_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		rest_us(3000);
		signal_tick();
	}
	/* Wake whoever still waits, so that they see stop. */
	pthread_mutex_lock(&CM);
	gen++;
	pthread_cond_broadcast(&C);
	pthread_mutex_unlock(&CM);
	sem_post(&S);
	return NULL;
}

__attribute__((noinline)) void stop_all(pthread_t *t, int n)
{
	unsigned long long t0;
	int i;

	atomic_store(&stop, 1);
	for (i = 0; i < n; i++) {
		t0 = now_ns();
		pthread_join(t[i], NULL);
		tally(&sites[S_STOP], now_ns() - t0);
	}
}

static void print_tallies(void)
{
	int i;

	for (i = 0; i < NSITES; i++)
		printf("wait %s %llu %llu\n", site_name[i], atomic_load(&sites[i].count),
		       atomic_load(&sites[i].ns));
	for (i = 0; i < NLOCKS; i++)
		printf("lockwait %s %llu %llu\n", lock_name[i], atomic_load(&locks[i].count),
		       atomic_load(&locks[i].ns));
	printf("end\n");
	fflush(stdout);
}

/* The fork test: F held by main, two threads waiting for it. */
static pthread_mutex_t F = PTHREAD_MUTEX_INITIALIZER;

static void *fork_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&F);
	pthread_mutex_unlock(&F);
	return NULL;
}

__attribute__((noinline)) void fork_hold(void)
{
	pthread_t t[2], ct;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	struct timespec abs;
	int i, status = 1;
	pid_t pid;

	pthread_mutex_lock(&F);
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, fork_waiter, NULL);
	rest_us(20000); /* both are waiting for F now */
	pid = fork();
	if (pid == 0) {
		/* The child: F is held by this thread; its waiters are not here. */
		pthread_mutex_unlock(&F);
		pthread_mutex_lock(&F);
		if (pthread_create(&ct, NULL, fork_waiter, NULL) != 0)
			_exit(2);
		rest_us(5000);
		pthread_mutex_unlock(&F);
		pthread_join(ct, NULL);
		pthread_mutex_lock(&F);
		clock_gettime(CLOCK_REALTIME, &abs);
		abs.tv_nsec = (abs.tv_nsec + 1000000) % 1000000000;
		if (abs.tv_nsec < 1000000)
			abs.tv_sec++;
		(void)pthread_cond_timedwait(&cv, &F, &abs);
		pthread_mutex_unlock(&F);
		free(malloc(1 << 20));
		_exit(0);
	}
	pthread_mutex_unlock(&F);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0)
		printf("fork ok\n");
	else
		printf("fork FAILED (status %d)\n", status);
	fflush(stdout);
}

static void on_usr1(int sig)
{
	(void)sig;
	report = 1;
}

int main(int argc, char **argv)
{
	void *(*fn[])(void *) = { holder_main, waiter_main, waiter_main, cond_main, cond_main,
				  sem_main, signal_main };
	void *fn_arg[] = { NULL, NULL, NULL, NULL, (void *)1, NULL, NULL };
	enum { NT = sizeof(fn) / sizeof(fn[0]) };
	unsigned long long end = 0;
	pthread_t t[NT];
	int i, opt, forktest = 0;

	while ((opt = getopt(argc, argv, "s:h:l:f")) != -1) {
		switch (opt) {
		case 's': end = now_ns() + (unsigned long long)(atof(optarg) * 1e9); break;
		case 'h': hold_us = atol(optarg) > 0 ? atol(optarg) : 1000; break;
		case 'l': long_every = strtoul(optarg, NULL, 10); break;
		case 'f': forktest = 1; break;
		default:
			fprintf(stderr, "usage: locks [-s SECONDS] [-h HOLD_US] [-f]\n");
			return 2;
		}
	}
	signal(SIGUSR1, on_usr1);
	sem_init(&S, 0, 0);
	if (forktest)
		fork_hold();
	for (i = 0; i < NT; i++)
		if (pthread_create(&t[i], NULL, fn[i], fn_arg[i]) != 0) {
			perror("locks: pthread_create");
			return 1;
		}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (!end || now_ns() < end) {
		rest_us(20000);
		if (report) {
			report = 0;
			print_tallies();
		}
	}
	stop_all(t, NT);
	print_tallies();
	printf("done\n");
	fflush(stdout);
	for (;;)
		pause();
}
