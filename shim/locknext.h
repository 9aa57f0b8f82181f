#ifndef CPROF_SHIM_LOCKNEXT_H
#define CPROF_SHIM_LOCKNEXT_H
/*
 * locknext — the lock, wait and join functions the program would call
 * without the shim: each the next definition after libcprof.so
 * (dlsym(RTLD_NEXT), glibc's, or another interposer's such as a race
 * detector's), found on first use, one by one.
 *
 * Invariants:
 *  - every slot of lock_next is always callable: until its function is
 *    found it holds a bootstrap function that looks it up (dlsym, with
 *    the recursion guard raised: dlsym may allocate), stores it and calls
 *    it. Lock functions run before the shim's constructor (in the
 *    constructors of libraries initialised earlier, libstdc++'s say), so
 *    nothing here waits for it;
 *  - a slot is written once with the function dlsym returned (two
 *    threads resolving at once store the same value); a function that
 *    cannot be found (not in this glibc: a program calling it could not
 *    have started) makes the call fail with ENOSYS, never crash;
 *  - looking up a function is the only thing here that takes a lock (the
 *    loader's, inside dlsym), and it happens once per function per
 *    process: on its first call, or at the first pthread_create, whichever
 *    comes first, so in a program whose threads come from pthread_create
 *    never while a second thread exists;
 *  - only lookups: no state but the slots, nothing to do at fork.
 */
#include <pthread.h>
#include <semaphore.h>
#include <time.h>

#include "shim/shim.h"

struct lock_next {
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*rwlock_rdlock)(pthread_rwlock_t *);
	int (*rwlock_tryrdlock)(pthread_rwlock_t *);
	int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_wrlock)(pthread_rwlock_t *);
	int (*rwlock_trywrlock)(pthread_rwlock_t *);
	int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_unlock)(pthread_rwlock_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
			      const struct timespec *);
	int (*sem_wait)(sem_t *);
	int (*sem_trywait)(sem_t *);
	int (*sem_timedwait)(sem_t *, const struct timespec *);
	int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
	int (*join)(pthread_t, void **);
	int (*tryjoin)(pthread_t, void **);
};

extern struct lock_next lock_next SHIM_HIDDEN;

/*
 * 1 once lock_next's mutex lock, trylock and unlock are known to be
 * glibc's own (locknext_resolve_all): then the shim may take a free
 * default mutex itself, as glibc's lock does (shim/locks.c), since no
 * other interposer (a race detector) waits behind it to see the call.
 * 0 until then, and for good when another library comes next.
 */
extern int lock_inline SHIM_HIDDEN;

/* Set by inject.c before any lookup when the shim was dlopen'd: dlsym(RTLD_DEFAULT) (next.h). */
extern int locknext_injected SHIM_HIDDEN;

/*
 * Looks up every function not yet found (once per process; later calls
 * return at once). Called by the first pthread_create, before the new
 * thread exists.
 */
void locknext_resolve_all(void) SHIM_HIDDEN;

#endif
