/*
 * test_shim_waiters.c — unit tests for shim/waiters.c, the side table of
 * contended locks, linked alone, on a clock the test sets: how a release
 * is charged when several threads wait (each release gets what its
 * waiters waited since their arrival or the previous release; a waiter's
 * remainder goes to the last release, or is carried while that release is
 * being recorded), that charges and remainders add up to the waits exactly
 * over a long random history, slots claimed and freed, a lock whose slot
 * another lock owns, and fork: a child inherits neither waiters nor a
 * slot lock held by a parent's thread (200 forks while threads hammer one
 * slot; a child stuck on a held lock would be killed by its alarm).
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim/waiters.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

static uint64_t real_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int setup(void **state)
{
	(void)state;
	waiters_clock = fake_clock;
	fake_now = 1000000;
	return 0;
}

/* Two waiters through a holder's critical section, then one through another's. */
static void test_apportion(void **state)
{
	static char lock[64];
	struct waiters_charge c;
	struct waiters_tail t;
	uint64_t t1, t2;

	(void)state;
	assert_false(waiters_may_wait(lock));
	fake_now = 1000100;
	assert_int_equal(waiters_enter(lock, &t1), 0);
	assert_int_equal(t1, 1000100);
	assert_true(waiters_may_wait(lock));
	assert_int_equal(waiters_owned(), 1);
	fake_now = 1000200;
	assert_int_equal(waiters_enter(lock, &t2), 0);
	/* The holder releases at 1001100: 1000 + 900 ns waited, two waiters. */
	fake_now = 1001100;
	assert_int_equal(waiters_release(lock, 1, 0, &c), 1);
	assert_int_equal(c.delay, 1900);
	assert_int_equal(c.nwait, 2);
	assert_int_equal(waiters_settle(lock, c.gen, 5, 10), 0);
	/* The first waiter wakes 50 ns later: its remainder goes to bucket 5, weight 10. */
	fake_now = 1001150;
	assert_int_equal(waiters_leave(lock, t1, &t), 1001150);
	assert_int_equal(t.ns, 50);
	assert_int_equal(t.bucket, 5);
	assert_int_equal(t.weight, 10);
	/* It releases 10 ns later, unrecorded: the other waited 60 ns more. */
	fake_now = 1001160;
	assert_int_equal(waiters_release(lock, 0, 0, &c), 1);
	assert_int_equal(c.delay, 60);
	assert_int_equal(c.nwait, 1);
	fake_now = 1001200;
	waiters_leave(lock, t2, &t);
	assert_int_equal(t.ns, 40);
	assert_int_equal(t.bucket, -1); /* the last release was not recorded */
	/* Nobody waits: the slot is free, and a release finds nothing. */
	assert_false(waiters_may_wait(lock));
	assert_int_equal(waiters_owned(), 0);
	assert_int_equal(waiters_release(lock, 1, 0, &c), 0);
}

/*
 * A release charged keep_ns or more is recorded whatever its draw (its
 * caller weighs it 1); below that, only when drawn; keep_ns 0: never by size.
 */
static void test_keep_by_size(void **state)
{
	const void *lock = (const void *)0x7000;
	struct waiters_charge c;
	uint64_t t1, t2;

	(void)state;
	fake_now = 5000000;
	assert_int_equal(waiters_enter(lock, &t1), 0);
	assert_int_equal(waiters_enter(lock, &t2), 0);
	fake_now = 5000400; /* 800 ns charged: below 1000, not drawn */
	assert_int_equal(waiters_release(lock, 0, 1000, &c), 1);
	assert_int_equal(c.delay, 800);
	assert_false(c.record);
	assert_false(c.by_size);
	fake_now = 5000900; /* 1000 ns: kept for its size */
	assert_int_equal(waiters_release(lock, 0, 1000, &c), 1);
	assert_int_equal(c.delay, 1000);
	assert_true(c.record);
	assert_true(c.by_size);
	assert_int_equal(waiters_settle(lock, c.gen, 3, 1), 0);
	fake_now = 5001000; /* drawn, small */
	assert_int_equal(waiters_release(lock, 1, 1000, &c), 1);
	assert_true(c.record);
	assert_false(c.by_size);
	assert_int_equal(waiters_settle(lock, c.gen, 4, 10), 0);
	fake_now = 6001000; /* a second each: kept by size only when keep_ns is set */
	assert_int_equal(waiters_release(lock, 0, 0, &c), 1);
	assert_false(c.record);
	waiters_leave(lock, t1, &(struct waiters_tail){ 0 });
	waiters_leave(lock, t2, &(struct waiters_tail){ 0 });
	assert_int_equal(waiters_owned(), 0);
}

/* Remainders that leave while their release is being recorded go to its settle. */
static void test_carry(void **state)
{
	static char lock[64];
	struct waiters_charge c, c2;
	struct waiters_tail t;
	uint64_t t1, t2, t3, t4;

	(void)state;
	fake_now = 2000000;
	waiters_enter(lock, &t1);
	waiters_enter(lock, &t2);
	waiters_enter(lock, &t3);
	waiters_enter(lock, &t4);
	fake_now = 2000500;
	assert_int_equal(waiters_release(lock, 1, 0, &c), 1);
	assert_int_equal(c.delay, 2000);
	fake_now = 2000530;
	waiters_leave(lock, t1, &t);
	assert_int_equal(t.bucket, -1); /* pending: carried */
	assert_int_equal(waiters_settle(lock, c.gen, 7, 3), 30);
	/* Settled: remainders go straight to its bucket. */
	fake_now = 2000600;
	waiters_leave(lock, t2, &t);
	assert_int_equal(t.bucket, 7);
	assert_int_equal(t.weight, 3);
	assert_int_equal(t.ns, 100);
	/*
	 * A release pending when a later one comes: the earlier keeps its own
	 * carry, and the later one's remainders are dropped meanwhile.
	 */
	fake_now = 2000700;
	assert_int_equal(waiters_release(lock, 1, 0, &c), 1);
	assert_int_equal(c.delay, 400);
	fake_now = 2000705;
	waiters_leave(lock, t3, &t);
	assert_int_equal(t.bucket, -1);
	fake_now = 2000710;
	assert_int_equal(waiters_release(lock, 1, 0, &c2), 1);
	assert_int_equal(c2.delay, 10);
	fake_now = 2000720;
	waiters_leave(lock, t4, &t);
	assert_int_equal(t.bucket, -1);
	assert_int_equal(waiters_settle(lock, c2.gen, 8, 1), 0); /* dropped, not carried */
	assert_int_equal(waiters_settle(lock, c.gen, 9, 1), 5);  /* the earlier's own */
	assert_int_equal(waiters_owned(), 0);
}

/*
 * A long random history of arrivals, releases (recorded, some settled only
 * later) and departures (only after a release, as a lock's waiter gets it):
 * charges plus remainders equal the time waited, to the nanosecond.
 */
static void test_conservation(void **state)
{
	static char lock[64];
	uint64_t t0[8], x = 88172645463325252ull, waited = 0, charged = 0;
	struct waiters_charge pend = { 0 };
	int n = 0, released_since[8], pending = 0, i, k;

	(void)state;
	fake_now = 3000000;
	for (i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		fake_now += 1 + x % 1000;
		switch ((x >> 20) % 4) {
		case 0: /* arrive */
			if (n < 8) {
				assert_int_equal(waiters_enter(lock, &t0[n]), 0);
				released_since[n++] = 0;
			}
			break;
		case 1: /* release (the previous recorded one settled first) */
			if (pending) {
				charged += waiters_settle(lock, pend.gen, 0, 1);
				pending = 0;
			}
			if (waiters_release(lock, 1, 0, &pend)) {
				charged += pend.delay;
				pending = (x >> 40) % 2;
				if (!pending)
					charged += waiters_settle(lock, pend.gen, 0, 1);
				for (k = 0; k < n; k++)
					released_since[k] = 1;
			}
			break;
		default: /* a waiter leaves, if a release happened since it came */
			k = n ? (int)((x >> 30) % (uint64_t)n) : 0;
			if (n && released_since[k]) {
				struct waiters_tail t;

				waited += waiters_leave(lock, t0[k], &t) - t0[k];
				if (t.bucket >= 0)
					charged += t.ns;
				t0[k] = t0[n - 1];
				released_since[k] = released_since[n - 1];
				n--;
			}
		}
	}
	/* The rest: a last release, everyone leaves. */
	if (pending)
		charged += waiters_settle(lock, pend.gen, 0, 1);
	fake_now += 10;
	if (waiters_release(lock, 1, 0, &pend)) {
		charged += pend.delay;
		charged += waiters_settle(lock, pend.gen, 0, 1);
	}
	while (n > 0) {
		struct waiters_tail t;

		fake_now += 3;
		n--;
		waited += waiters_leave(lock, t0[n], &t) - t0[n];
		if (t.bucket >= 0)
			charged += t.ns;
	}
	assert_true(waited > 1000000);
	assert_int_equal(charged, waited);
	assert_int_equal(waiters_owned(), 0);
}

/* Two locks in one slot: the second is not followed until the first's waiters are gone. */
static void test_collision(void **state)
{
	static char space[1 << 20];
	char *a = space, *b = NULL;
	struct waiters_tail t;
	uint64_t ta, tb;
	size_t off;

	(void)state;
	for (off = 8; off < sizeof(space); off += 8)
		if (waiters_slot(space + off) == waiters_slot(a)) {
			b = space + off;
			break;
		}
	assert_non_null(b);
	assert_int_equal(waiters_enter(a, &ta), 0);
	assert_int_equal(waiters_enter(b, &tb), -1);
	assert_false(waiters_may_wait(b));
	waiters_leave(a, ta, &t);
	assert_int_equal(waiters_enter(b, &tb), 0);
	assert_true(waiters_may_wait(b));
	waiters_leave(b, tb, &t);
	assert_int_equal(waiters_owned(), 0);
}

/* A fork child: the parent's waiters are gone; a stale key empties on first touch. */
static void test_fork_child_state(void **state)
{
	static char lock[64];
	struct waiters_charge c;
	struct waiters_tail t;
	uint64_t t1;

	(void)state;
	assert_int_equal(waiters_enter(lock, &t1), 0);
	waiters_fork_child(); /* as if this process were the child */
	assert_int_equal(waiters_owned(), 0);
	assert_true(waiters_may_wait(lock)); /* the key is still there... */
	assert_int_equal(waiters_release(lock, 1, 0, &c), 0); /* ...and nothing behind it */
	assert_false(waiters_may_wait(lock));
	/* The parent-era waiter leaving is harmless. */
	waiters_leave(lock, t1, &t);
	assert_int_equal(t.bucket, -1);
	assert_int_equal(waiters_enter(lock, &t1), 0);
	waiters_leave(lock, t1, &t);
	assert_int_equal(waiters_owned(), 0);
}

static char hammered[64];
static volatile int hammering;

static void *hammer(void *arg)
{
	struct waiters_charge c;
	struct waiters_tail t;
	uint64_t t0;

	(void)arg;
	while (hammering) {
		if (waiters_enter(hammered, &t0) == 0) {
			(void)waiters_release(hammered, 0, 0, &c);
			waiters_leave(hammered, t0, &t);
		}
	}
	return NULL;
}

/* Forks while two threads take and give the slot's lock all the time. */
static void test_fork_held_lock(void **state)
{
	pthread_t th[2];
	int i, status;

	(void)state;
	waiters_clock = real_clock;
	hammering = 1;
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, hammer, NULL), 0);
	for (i = 0; i < 200; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			struct waiters_tail t;
			uint64_t t0;

			alarm(5);
			waiters_fork_child();
			if (waiters_enter(hammered, &t0) != 0)
				_exit(3);
			waiters_leave(hammered, t0, &t);
			_exit(waiters_owned() == 0 ? 0 : 4);
		}
		assert_true(pid > 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("fork %d: child status %d", i, status);
	}
	hammering = 0;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	waiters_clock = fake_clock;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_apportion, setup),
		cmocka_unit_test_setup(test_carry, setup),
		cmocka_unit_test_setup(test_keep_by_size, setup),
		cmocka_unit_test_setup(test_conservation, setup),
		cmocka_unit_test_setup(test_collision, setup),
		cmocka_unit_test_setup(test_fork_child_state, setup),
		cmocka_unit_test_setup(test_fork_held_lock, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
