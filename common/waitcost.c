/*
 * waitcost.c — the CPU of one wait, measured on our own threads
 * (waitcost.h). One helper thread waits on a futex that another wakes
 * every 20 us, both on the caller's CPU, so that the waiter really
 * switches out and back in: what its CPU clock shows per wait is the
 * switch plus a futex call's entry and exit. Then the same thread sleeps
 * on its own timer, which adds arming the timer and its expiry: on a
 * plain VM a little more, run with interrupts on and sampled where they
 * run; where programming the timer traps to the hypervisor (a PVM guest)
 * several times the futex's cost, none of it seen by a sampler. Which of
 * the two a thread's waits cost is the sampler's call (waitcost_mix):
 * charged to every wait, the timer's figure gave a server woken by its
 * sockets many times the switching perf record found.
 */
#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
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
#define MIN_ROUNDS 8      /* fewer by the deadline: no estimate */
#define DEADLINE_NS 100000000ull /* the whole measurement, wall time */
#define HELPER_NICE -10   /* as the ptrace tracer: a saturated host must not hold us up */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t cost;
static uint64_t timer_cost; /* a timer sleep's; at least cost */
static int seq;           /* the waker's count; a futex word */
static int stop;          /* the measurement is over */
static int done;          /* cost and timer_cost are final */

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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Keep the calling thread on cpu (where allowed: a cpuset may forbid it,
 * then it roams), ahead of the host's busy threads where allowed (root,
 * CAP_SYS_NICE): on 2 CPUs saturated by 16 threads at nice 0 the
 * ping-pong waited its turn at every wake and the capture began late.
 */
static void pin(int cpu)
{
	cpu_set_t m;

	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), HELPER_NICE);
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
	uint64_t per[ROUNDS];  /* CPU per wait, each round's */
	uint64_t tper[ROUNDS]; /* CPU per timer sleep, each round's */
	int rounds;            /* how many were done by the deadline */
	int trounds;           /* timer sleeps: the same */
	int cpu;               /* where both threads run; -1: anywhere */
};

/*
 * Rounds of PER_ROUND timer sleeps of WAKE_EVERY_NS, alone on the CPU (the
 * waker has stopped): their CPU each, sorted, into tper. Returns 0, or -1
 * when fewer than MIN_ROUNDS were done.
 */
static int timer_rounds(struct job *j, uint64_t deadline)
{
	struct timespec nap = { 0, WAKE_EVERY_NS };
	uint64_t a = 0, b = 0;
	int r, i;

	for (r = 0; r < ROUNDS; r++) {
		if (r >= MIN_ROUNDS && mono_ns() > deadline)
			break;
		if (thread_cpu(&a) < 0)
			return -1;
		for (i = 0; i < PER_ROUND; i++)
			clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL);
		if (thread_cpu(&b) < 0)
			return -1;
		j->tper[r] = b > a ? (b - a) / PER_ROUND : 0;
	}
	j->trounds = r;
	qsort(j->tper, (size_t)r, sizeof(j->tper[0]), cmp_u64);
	return 0;
}

/* The waiting thread: its rounds, sorted, into the job; the job, or NULL on failure. */
static void *waiter(void *arg)
{
	struct job *j = arg;
	uint64_t *per = j->per, a = 0, b = 0, deadline;
	int r, i, ok = 1;

	pin(j->cpu);
	deadline = mono_ns() + DEADLINE_NS;
	for (r = 0; r < ROUNDS && ok; r++) {
		if (r >= MIN_ROUNDS && mono_ns() > deadline)
			break;
		ok = thread_cpu(&a) == 0;
		for (i = 0; i < PER_ROUND && ok; i++)
			ok = wait_once() == 0;
		ok = ok && thread_cpu(&b) == 0;
		per[r] = b > a ? (b - a) / PER_ROUND : 0;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	if (!ok || r < MIN_ROUNDS)
		return NULL;
	j->rounds = r;
	qsort(per, (size_t)r, sizeof(per[0]), cmp_u64);
	if (timer_rounds(j, deadline + DEADLINE_NS) < 0)
		j->trounds = 0;
	return j;
}

/*
 * Both helper threads on the CPU the caller is on (the caller's own
 * affinity is left alone): woken from another CPU, the cost varied with
 * what that CPU did, run to run and several-fold under load; on one CPU
 * it is the switch itself, lower and steady whether quiet or loaded. The
 * lower, steadier figure errs low: a thread woken on a cold cache pays
 * more, and that rest stays where the samples put it.
 */
static void measure_run(void)
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
	if (!res)
		return;
	cost = j.per[j.rounds / 4] < COST_MAX_NS ? j.per[j.rounds / 4] : COST_MAX_NS;
	/*
	 * The timer's least: beside a busy thread of another process a round
	 * costs more (the switch changes page tables) than alone, and a loop
	 * woken from an idle CPU pays the least.
	 */
	if (j.trounds)
		timer_cost = j.tper[0] < COST_MAX_NS ? j.tper[0] : COST_MAX_NS;
	if (timer_cost < cost)
		timer_cost = cost;
}

static void measure(void)
{
	measure_run();
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

static void *measure_main(void *arg)
{
	(void)arg;
	pthread_once(&once, measure);
	return NULL;
}

void waitcost_start(void)
{
	static int started;
	pthread_attr_t a;
	pthread_t th;

	if (__atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL))
		return;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* Without a thread of its own it is measured now, so that it is always ready after. */
	if (pthread_create(&th, &a, measure_main, NULL) != 0)
		pthread_once(&once, measure);
	pthread_attr_destroy(&a);
}

int waitcost_ready(uint64_t *cost_ns, uint64_t *timer_ns)
{
	if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		return 0;
	*cost_ns = cost;
	*timer_ns = timer_cost;
	return 1;
}

uint64_t waitcost_ns(void)
{
	pthread_once(&once, measure);
	return cost;
}

uint64_t waitcost_timer_ns(void)
{
	pthread_once(&once, measure);
	return timer_cost;
}

uint64_t waitcost_mix(uint64_t cost_ns, uint64_t timer_ns, uint64_t timed, uint64_t asleep)
{
	if (!asleep || timer_ns <= cost_ns)
		return cost_ns;
	if (timed > asleep)
		timed = asleep;
	return cost_ns + (timer_ns - cost_ns) * timed / asleep;
}

uint64_t waitcost_of(uint64_t slices, uint64_t cost_ns, uint64_t used)
{
	if (!cost_ns || !slices)
		return 0;
	if (slices > used / cost_ns)
		return used;
	return slices * cost_ns;
}
