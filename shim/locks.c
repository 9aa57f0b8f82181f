/*
 * locks.c — the interposed lock, wait and join functions. The fast path
 * of an acquisition takes the lock without a clock, a table or a write but
 * the lock's own: a free default mutex is taken here as glibc's own
 * pthread_mutex_lock takes it (locks_mutex_take), where glibc's lock is
 * the next one; any other lock through the real try-function
 * (pthread_mutex_trylock for pthread_mutex_lock, and so on). Only when
 * that fails does the out-of-line slow path read the clock, register the
 * waiter (shim/lockprof.h) and call the real blocking function. A release
 * first loads one word of the waiter side table (shim/waiters.h): a lock
 * nobody waits for costs that load, a branch and glibc's release (here,
 * for a default mutex, or the real unlock); one with waiters is charged
 * before the real unlock, while the releaser still holds it (see
 * waiters.h), and its stack is captured after. Condition-variable waits
 * always block, so they are timed; they also release their mutex, which
 * counts as a release for the mutex profile. C++'s std::mutex,
 * std::timed_mutex, std::condition_variable, std::shared_mutex and
 * std::thread::join reach these through libstdc++ and its inline headers
 * (pthread_mutex_lock, pthread_mutex_clocklock, pthread_cond_wait and
 * _clockwait, the rwlock functions, pthread_join). What the fast paths
 * cost is measured by bench/locks (doc/locks.md).
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim/lockprof.h"
#include "shim/locknext.h"
#include "shim/segment.h"
#include "shim/shim.h"
#include "shim/waiters.h"

#define LOCKS_COLD __attribute__((noinline, cold))

/* The kinds of blocking acquisition, for the slow paths. */
enum { LOCKS_PLAIN, LOCKS_TIMED, LOCKS_CLOCK };

/*
 * Whether a timed call's clock and deadline are valid. glibc checks them
 * before trying the lock in some functions (EINVAL even when the lock is
 * free): an invalid one goes straight to the real function, so that the
 * answer stays glibc's.
 */
static inline int locks_abs_ok(clockid_t clk, const struct timespec *abs)
{
	return (clk == CLOCK_MONOTONIC || clk == CLOCK_REALTIME) && abs != NULL &&
	       abs->tv_nsec >= 0 && abs->tv_nsec < 1000000000;
}

static LOCKS_COLD int locks_mutex_wait(pthread_mutex_t *m, int how, clockid_t clk,
				       const struct timespec *abs)
{
	struct lockprof_wait w;
	int rc;

	lockprof_enter(m, SEG_PRIM_MUTEX, &w);
	if (how == LOCKS_PLAIN)
		rc = lock_next.mutex_lock(m);
	else if (how == LOCKS_TIMED)
		rc = lock_next.mutex_timedlock(m, abs);
	else
		rc = lock_next.mutex_clocklock(m, clk, abs);
	lockprof_leave(m, &w, rc == 0 || rc == ETIMEDOUT);
	return rc;
}

/* This thread's kernel id, for a mutex's owner field; reset in a forked child (init.c). */
static inline int locks_tid(void)
{
	if (__builtin_expect(shim_tls.tid == 0, 0))
		shim_tls.tid = (int)gettid();
	return shim_tls.tid;
}

/*
 * Take a free default mutex (kind 0: normal, private, no elision, not
 * robust) as glibc's pthread_mutex_lock does: the lock word from 0 to 1,
 * then the owner and the user count. It is glibc's trylock without its
 * call, type dispatch and saved registers, which made an uncontended pair
 * cost more than glibc's own lock pair (doc/locks.md). Only where the
 * next lock is glibc's own (lock_inline): 0 taken, EBUSY held, -1 not
 * such a mutex (or not glibc's), for the trylock.
 */
static inline int locks_mutex_take(pthread_mutex_t *m)
{
	int free = 0;

	if (!__atomic_load_n(&lock_inline, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) != 0)
		return -1;
	if (!__atomic_compare_exchange_n(&m->__data.__lock, &free, 1, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return EBUSY;
	m->__data.__owner = locks_tid();
	++m->__data.__nusers;
	return 0;
}

SHIM_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	int rc = locks_mutex_take(m);

	if (__builtin_expect(rc == 0, 1))
		return 0;
	if (rc < 0 && (rc = lock_next.mutex_trylock(m)) != EBUSY)
		return rc;
	return locks_mutex_wait(m, LOCKS_PLAIN, 0, NULL);
}

SHIM_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abs)
{
	int rc;

	if (!locks_abs_ok(CLOCK_REALTIME, abs))
		return lock_next.mutex_timedlock(m, abs);
	rc = lock_next.mutex_trylock(m);

	if (__builtin_expect(rc != EBUSY, 1))
		return rc;
	return locks_mutex_wait(m, LOCKS_TIMED, 0, abs);
}

SHIM_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk,
					const struct timespec *abs)
{
	int rc;

	if (!locks_abs_ok(clk, abs))
		return lock_next.mutex_clocklock(m, clk, abs);
	rc = lock_next.mutex_trylock(m);

	if (__builtin_expect(rc != EBUSY, 1))
		return rc;
	return locks_mutex_wait(m, LOCKS_CLOCK, clk, abs);
}

/* A release of a mutex that threads may wait for: charged first, recorded after. */
static LOCKS_COLD int locks_mutex_release(pthread_mutex_t *m)
{
	struct lockprof_release r;
	int rc;

	lockprof_release_begin(m, &r);
	rc = lock_next.mutex_unlock(m);
	lockprof_release_end(m, &r, rc == 0);
	return rc;
}

/*
 * Release a default mutex as glibc's pthread_mutex_unlock does (the
 * counterpart of locks_mutex_take, for any holder: the protocol is
 * glibc's): owner and user count first, then the lock word to 0, and a
 * futex wake if it said that threads sleep on it (2). -1: not such a
 * mutex, for the real unlock.
 */
static inline int locks_mutex_give(pthread_mutex_t *m)
{
	if (!__atomic_load_n(&lock_inline, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) != 0)
		return -1;
	m->__data.__owner = 0;
	--m->__data.__nusers;
	if (__builtin_expect(__atomic_exchange_n(&m->__data.__lock, 0, __ATOMIC_RELEASE) > 1, 0))
		syscall(SYS_futex, &m->__data.__lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return 0;
}

SHIM_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (__builtin_expect(waiters_may_wait(m), 0))
		return locks_mutex_release(m);
	if (__builtin_expect(locks_mutex_give(m) == 0, 1))
		return 0;
	return lock_next.mutex_unlock(m);
}

/* rwlocks: the same with tryrdlock/trywrlock first. */
static LOCKS_COLD int locks_rwlock_wait(pthread_rwlock_t *l, int write, int how, clockid_t clk,
					const struct timespec *abs)
{
	struct lockprof_wait w;
	int rc;

	lockprof_enter(l, SEG_PRIM_RWLOCK, &w);
	if (how == LOCKS_PLAIN)
		rc = write ? lock_next.rwlock_wrlock(l) : lock_next.rwlock_rdlock(l);
	else if (how == LOCKS_TIMED)
		rc = write ? lock_next.rwlock_timedwrlock(l, abs) : lock_next.rwlock_timedrdlock(l, abs);
	else
		rc = write ? lock_next.rwlock_clockwrlock(l, clk, abs) :
			     lock_next.rwlock_clockrdlock(l, clk, abs);
	lockprof_leave(l, &w, rc == 0 || rc == ETIMEDOUT);
	return rc;
}

SHIM_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	int rc = lock_next.rwlock_tryrdlock(l);

	if (__builtin_expect(rc != EBUSY, 1))
		return rc;
	return locks_rwlock_wait(l, 0, LOCKS_PLAIN, 0, NULL);
}

SHIM_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abs)
{
	int rc;

	if (!locks_abs_ok(CLOCK_REALTIME, abs))
		return lock_next.rwlock_timedrdlock(l, abs);
	rc = lock_next.rwlock_tryrdlock(l);

	if (__builtin_expect(rc != EBUSY, 1))
		return rc;
	return locks_rwlock_wait(l, 0, LOCKS_TIMED, 0, abs);
}

SHIM_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clk,
					   const struct timespec *abs)
{
	int rc;

	if (!locks_abs_ok(clk, abs))
		return lock_next.rwlock_clockrdlock(l, clk, abs);
	rc = lock_next.rwlock_tryrdlock(l);

	if (__builtin_expect(rc != EBUSY, 1))
		return rc;
	return locks_rwlock_wait(l, 0, LOCKS_CLOCK, clk, abs);
}

SHIM_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	int rc = lock_next.rwlock_trywrlock(l);

	if (__builtin_expect(rc != EBUSY, 1))
		return rc;
	return locks_rwlock_wait(l, 1, LOCKS_PLAIN, 0, NULL);
}

SHIM_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abs)
{
	int rc;

	if (!locks_abs_ok(CLOCK_REALTIME, abs))
		return lock_next.rwlock_timedwrlock(l, abs);
	rc = lock_next.rwlock_trywrlock(l);

	if (__builtin_expect(rc != EBUSY, 1))
		return rc;
	return locks_rwlock_wait(l, 1, LOCKS_TIMED, 0, abs);
}

SHIM_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clk,
					   const struct timespec *abs)
{
	int rc;

	if (!locks_abs_ok(clk, abs))
		return lock_next.rwlock_clockwrlock(l, clk, abs);
	rc = lock_next.rwlock_trywrlock(l);

	if (__builtin_expect(rc != EBUSY, 1))
		return rc;
	return locks_rwlock_wait(l, 1, LOCKS_CLOCK, clk, abs);
}

static LOCKS_COLD int locks_rwlock_release(pthread_rwlock_t *l)
{
	struct lockprof_release r;
	int rc;

	lockprof_release_begin(l, &r);
	rc = lock_next.rwlock_unlock(l);
	lockprof_release_end(l, &r, rc == 0);
	return rc;
}

SHIM_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	if (__builtin_expect(waiters_may_wait(l), 0))
		return locks_rwlock_release(l);
	return lock_next.rwlock_unlock(l);
}

/*
 * Condition variables: always a wait. The mutex is released inside glibc
 * (not through pthread_mutex_unlock), so its waiters are charged to this
 * caller first, as the release it is.
 */
static LOCKS_COLD int locks_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, int how,
				      clockid_t clk, const struct timespec *abs)
{
	struct lockprof_release r;
	struct lockprof_wait w;
	int rc;

	if (waiters_may_wait(m)) {
		/* Recorded before the wait: a cancelled wait must not leave the slot pending. */
		lockprof_release_begin(m, &r);
		lockprof_release_end(m, &r, 1);
	}
	lockprof_enter(NULL, SEG_PRIM_COND, &w);
	if (how == LOCKS_PLAIN)
		rc = lock_next.cond_wait(c, m);
	else if (how == LOCKS_TIMED)
		rc = lock_next.cond_timedwait(c, m, abs);
	else
		rc = lock_next.cond_clockwait(c, m, clk, abs);
	lockprof_leave(NULL, &w, rc == 0 || rc == ETIMEDOUT);
	return rc;
}

SHIM_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	return locks_cond_wait(c, m, LOCKS_PLAIN, 0, NULL);
}

SHIM_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				       const struct timespec *abs)
{
	return locks_cond_wait(c, m, LOCKS_TIMED, 0, abs);
}

SHIM_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
				       const struct timespec *abs)
{
	return locks_cond_wait(c, m, LOCKS_CLOCK, clk, abs);
}

/* Semaphores: sem_trywait first; -1 with errno EAGAIN means it would block. */
static LOCKS_COLD int locks_sem_wait(sem_t *s, int how, clockid_t clk, const struct timespec *abs)
{
	struct lockprof_wait w;
	int rc, e;

	lockprof_enter(NULL, SEG_PRIM_SEM, &w);
	if (how == LOCKS_PLAIN)
		rc = lock_next.sem_wait(s);
	else if (how == LOCKS_TIMED)
		rc = lock_next.sem_timedwait(s, abs);
	else
		rc = lock_next.sem_clockwait(s, clk, abs);
	e = errno;
	lockprof_leave(NULL, &w, rc == 0 || e == ETIMEDOUT || e == EINTR);
	return rc;
}

SHIM_EXPORT int sem_wait(sem_t *s)
{
	if (__builtin_expect(lock_next.sem_trywait(s) == 0, 1))
		return 0;
	if (errno != EAGAIN)
		return -1;
	return locks_sem_wait(s, LOCKS_PLAIN, 0, NULL);
}

SHIM_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abs)
{
	if (!locks_abs_ok(CLOCK_REALTIME, abs))
		return lock_next.sem_timedwait(s, abs);
	if (__builtin_expect(lock_next.sem_trywait(s) == 0, 1))
		return 0;
	if (errno != EAGAIN)
		return -1;
	return locks_sem_wait(s, LOCKS_TIMED, 0, abs);
}

SHIM_EXPORT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *abs)
{
	if (!locks_abs_ok(clk, abs))
		return lock_next.sem_clockwait(s, clk, abs);
	if (__builtin_expect(lock_next.sem_trywait(s) == 0, 1))
		return 0;
	if (errno != EAGAIN)
		return -1;
	return locks_sem_wait(s, LOCKS_CLOCK, clk, abs);
}

/* pthread_join: pthread_tryjoin_np first (it is the same call, not blocking). */
static LOCKS_COLD int locks_join_wait(pthread_t th, void **ret)
{
	struct lockprof_wait w;
	int rc;

	lockprof_enter(NULL, SEG_PRIM_JOIN, &w);
	rc = lock_next.join(th, ret);
	lockprof_leave(NULL, &w, rc == 0);
	return rc;
}

SHIM_EXPORT int pthread_join(pthread_t th, void **ret)
{
	int rc = lock_next.tryjoin(th, ret);

	if (__builtin_expect(rc != EBUSY, 1))
		return rc;
	return locks_join_wait(th, ret);
}
