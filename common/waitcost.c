/*
 * waitcost.c — the CPU of one wait, measured on our own threads
 * (waitcost.h). One helper thread waits on a futex that another wakes
 * every 20 us, both on the caller's CPU, so that the waiter really
 * switches out and back in: what its CPU clock shows per wait is the
 * switch plus a futex call's entry and exit, 1.3-2.1 us on this project's
 * 2-CPU VMs, quiet or loaded. Why not our own sleeps: a thread woken by
 * its own timer (clock_nanosleep) costs itself 5.5-7 us, the extra (the
 * timer's arming and expiry) runs with interrupts on and is sampled where
 * it runs, and that estimate charged redis-server 19% to switching where
 * perf record puts 3.2% in finish_task_switch (the switch in alone) at
 * 19,000 waits a second.
 */
#include <errno.h>
#include <sched.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/waitcost.h"

#define ROUNDS 32
#define PER_ROUND 4
#define WAKE_EVERY_NS 20000
#define COST_MAX_NS 50000 /* more is not a wait's cost but a busy host's */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t cost;
static int seq;           /* the waker's count; a futex word */
static int stop;          /* the measurement is over */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int thread_cpu(uint64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return -1;
	*ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

static long futex(int *word, int op, int val)
{
	return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

/* Keep the calling thread on cpu (where allowed: a cpuset may forbid it, then it roams). */
static void pin(int cpu)
{
	cpu_set_t m;

	if (cpu < 0)
		return;
	CPU_ZERO(&m);
	CPU_SET(cpu, &m);
	sched_setaffinity(0, sizeof(m), &m);
}

static void *waker(void *arg)
{
	struct timespec nap = { 0, WAKE_EVERY_NS };

	pin(*(int *)arg);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL);
		__atomic_add_fetch(&seq, 1, __ATOMIC_RELEASE);
		futex(&seq, FUTEX_WAKE_PRIVATE, 1);
	}
	return NULL;
}

/* One wait that really slept: 0, or -1 after too many tries (the waker is gone). */
static int wait_once(void)
{
	int tries, now;

	for (tries = 0; tries < 1000; tries++) {
		now = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
		if (futex(&seq, FUTEX_WAIT_PRIVATE, now) == 0)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return -1;
	}
	return -1;
}

struct job {
	uint64_t per[ROUNDS]; /* CPU per wait, each round's */
	int cpu;              /* where both threads run; -1: anywhere */
};

/* The waiting thread: its rounds, sorted, into the job; the job, or NULL on failure. */
static void *waiter(void *arg)
{
	struct job *j = arg;
	uint64_t *per = j->per, a = 0, b = 0;
	int r, i, ok = 1;

	pin(j->cpu);
	for (r = 0; r < ROUNDS && ok; r++) {
		ok = thread_cpu(&a) == 0;
		for (i = 0; i < PER_ROUND && ok; i++)
			ok = wait_once() == 0;
		ok = ok && thread_cpu(&b) == 0;
		per[r] = b > a ? (b - a) / PER_ROUND : 0;
	}
	if (!ok)
		return NULL;
	qsort(per, ROUNDS, sizeof(per[0]), cmp_u64);
	return j;
}

/*
 * Both helper threads on the CPU the caller is on (the caller's own
 * affinity is left alone): woken from another CPU, the cost varied with
 * what that CPU did, 2.6 us on a quiet VM and 8-10 us while ab loaded
 * nginx on both CPUs, run to run; on one CPU it is the switch itself,
 * 1.3-2.1 us quiet or loaded. The lower, steadier figure errs low: a
 * thread woken on a cold cache pays more, and that rest stays where the
 * samples put it.
 */
static void measure(void)
{
	struct job j;
	pthread_t tw, tr;
	void *res = NULL;

	j.cpu = sched_getcpu();
	if (pthread_create(&tw, NULL, waker, &j.cpu) != 0)
		return;
	if (pthread_create(&tr, NULL, waiter, &j) == 0)
		pthread_join(tr, &res);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(tw, NULL);
	if (res)
		cost = j.per[ROUNDS / 4] < COST_MAX_NS ? j.per[ROUNDS / 4] : COST_MAX_NS;
}

uint64_t waitcost_ns(void)
{
	pthread_once(&once, measure);
	return cost;
}

uint64_t waitcost_of(uint64_t slices, uint64_t cost_ns, uint64_t used)
{
	if (!cost_ns || !slices)
		return 0;
	if (slices > used / cost_ns)
		return used;
	return slices * cost_ns;
}
