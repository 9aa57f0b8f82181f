/*
 * lockstress — mutual exclusion under libcprof.so's own take and release
 * of default mutexes (shim/locks.c). T threads (default 4) increment one
 * shared counter under one default mutex for S seconds (default 2), each
 * counting its own increments; every 8th time through pthread_mutex_trylock
 * (spinning until it gets it), every 32nd through pthread_mutex_timedlock,
 * every 64th with a pthread_cond_timedwait on the mutex (glibc's own
 * internal unlock and relock) that a signaller thread ends. After each
 * take, the mutex's owner field must be the thread's kernel id (glibc's
 * word for who holds it, read by debuggers). Then main forks while no
 * thread holds it; the child takes it (owner: the child's id), and
 * contends on it with a thread of its own. Prints
 *   count SHARED SUM OWNER_ERRORS
 *   fork ok | fork FAILED
 * and exits 0 when SHARED == SUM, no owner error and the child was fine.
 * A mutex with another kind (recursive, error-checking) is taken by glibc
 * alone; the recursive one here checks that it still recurses.
 * Usage: lockstress [threads [seconds]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 32

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t rec;
static volatile long shared;
static volatile int stop;
static long owner_errors;
static long counts[MAX_THREADS];

/* Who glibc says holds m: checked by each holder. */
static void check_owner(void)
{
	if (m.__data.__owner != gettid())
		__atomic_add_fetch(&owner_errors, 1, __ATOMIC_RELAXED);
}

static void deadline(struct timespec *ts, long ns)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_nsec += ns;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

static void *worker(void *arg)
{
	long i, *mine = arg;
	struct timespec ts;

	for (i = 0; !stop; i++) {
		if (i % 8 == 3) {
			while (pthread_mutex_trylock(&m) == EBUSY)
				;
		} else if (i % 32 == 5) {
			deadline(&ts, 50000000);
			while (pthread_mutex_timedlock(&m, &ts) == ETIMEDOUT)
				deadline(&ts, 50000000);
		} else {
			pthread_mutex_lock(&m);
		}
		check_owner();
		shared++;
		(*mine)++;
		if (i % 64 == 7) {
			deadline(&ts, 1000000);
			pthread_cond_timedwait(&c, &m, &ts);
			check_owner();
		}
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

static void *signaller(void *arg)
{
	(void)arg;
	while (!stop) {
		pthread_mutex_lock(&m);
		check_owner();
		pthread_cond_broadcast(&c);
		pthread_mutex_unlock(&m);
		usleep(200);
	}
	return NULL;
}

static void *child_thread(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 100000; i++) {
		pthread_mutex_lock(&m);
		shared++;
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

/* The child of a fork: its own id in the owner field, and a contended run. */
static int child(void)
{
	pthread_t t;
	int i, bad = 0;

	pthread_mutex_lock(&m);
	bad |= m.__data.__owner != gettid();
	pthread_mutex_unlock(&m);
	shared = 0;
	if (pthread_create(&t, NULL, child_thread, NULL) != 0)
		return 1;
	for (i = 0; i < 100000; i++) {
		pthread_mutex_lock(&m);
		bad |= m.__data.__owner != gettid();
		shared++;
		pthread_mutex_unlock(&m);
	}
	pthread_join(t, NULL);
	return bad || shared != 200000;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4, secs = argc > 2 ? atoi(argv[2]) : 2, i, st;
	pthread_mutexattr_t a;
	pthread_t th[MAX_THREADS + 1];
	long sum = 0;
	pid_t pid;

	if (n < 1 || n > MAX_THREADS)
		n = 4;
	/* Before any thread: the shim has not yet looked at glibc's lock. */
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec, &a);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, &counts[i]);
	pthread_create(&th[n], NULL, signaller, NULL);
	/* A recursive mutex taken twice, in the middle of it all. */
	pthread_mutex_lock(&rec);
	if (pthread_mutex_lock(&rec) != 0 || rec.__data.__count != 2)
		owner_errors++;
	pthread_mutex_unlock(&rec);
	pthread_mutex_unlock(&rec);
	sleep((unsigned)secs);
	stop = 1;
	for (i = 0; i <= n; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < n; i++)
		sum += counts[i];
	printf("count %ld %ld %ld\n", shared, sum, owner_errors);
	pid = fork();
	if (pid == 0)
		_exit(child());
	st = -1;
	waitpid(pid, &st, 0);
	printf("fork %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "FAILED");
	return !(shared == sum && !owner_errors && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
