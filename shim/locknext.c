/*
 * locknext.c — the bootstrap slots of lock_next (locknext.h): each slot
 * starts at a function of its own that finds the real one with
 * dlsym(RTLD_NEXT), stores it and calls it, so the first call of each
 * lock function costs one dlsym and every later one an indirect call,
 * like the PLT entry it replaces. Nothing is looked up in the
 * constructor: a process that never takes a lock pays nothing at start;
 * the first pthread_create looks up all of them at once, while the
 * program has one thread, so that no lookup (which takes the loader's
 * lock) happens later in a thread that holds a lock someone inside dlopen
 * may wait for.
 * The bootstrap functions are generated from one list, with the value
 * each returns when its function is missing.
 */
#include "shim/locknext.h"

#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int locknext_injected;

/* dlsym(RTLD_NEXT, name) (RTLD_DEFAULT injected) with the recursion guard raised (dlsym may allocate). */
static void *locknext_find(const char *name)
{
	void *f;

	shim_tls.busy++;
	f = dlsym(locknext_injected ? RTLD_DEFAULT : RTLD_NEXT, name);
	shim_tls.busy--;
	return f;
}

/* A missing pthread function: ENOSYS; a missing sem_* one: -1 with errno ENOSYS. */
#define LN_FAIL_PTHREAD return ENOSYS
#define LN_FAIL_SEM \
	do { \
		errno = ENOSYS; \
		return -1; \
	} while (0)

/* X(slot, symbol, parameters, arguments, failure) */
#define LOCKNEXT_LIST(X) \
	X(mutex_lock, "pthread_mutex_lock", (pthread_mutex_t *m), (m), LN_FAIL_PTHREAD) \
	X(mutex_trylock, "pthread_mutex_trylock", (pthread_mutex_t *m), (m), LN_FAIL_PTHREAD) \
	X(mutex_timedlock, "pthread_mutex_timedlock", (pthread_mutex_t *m, const struct timespec *t), \
	  (m, t), LN_FAIL_PTHREAD) \
	X(mutex_clocklock, "pthread_mutex_clocklock", \
	  (pthread_mutex_t *m, clockid_t c, const struct timespec *t), (m, c, t), LN_FAIL_PTHREAD) \
	X(mutex_unlock, "pthread_mutex_unlock", (pthread_mutex_t *m), (m), LN_FAIL_PTHREAD) \
	X(rwlock_rdlock, "pthread_rwlock_rdlock", (pthread_rwlock_t *l), (l), LN_FAIL_PTHREAD) \
	X(rwlock_tryrdlock, "pthread_rwlock_tryrdlock", (pthread_rwlock_t *l), (l), LN_FAIL_PTHREAD) \
	X(rwlock_timedrdlock, "pthread_rwlock_timedrdlock", \
	  (pthread_rwlock_t *l, const struct timespec *t), (l, t), LN_FAIL_PTHREAD) \
	X(rwlock_clockrdlock, "pthread_rwlock_clockrdlock", \
	  (pthread_rwlock_t *l, clockid_t c, const struct timespec *t), (l, c, t), LN_FAIL_PTHREAD) \
	X(rwlock_wrlock, "pthread_rwlock_wrlock", (pthread_rwlock_t *l), (l), LN_FAIL_PTHREAD) \
	X(rwlock_trywrlock, "pthread_rwlock_trywrlock", (pthread_rwlock_t *l), (l), LN_FAIL_PTHREAD) \
	X(rwlock_timedwrlock, "pthread_rwlock_timedwrlock", \
	  (pthread_rwlock_t *l, const struct timespec *t), (l, t), LN_FAIL_PTHREAD) \
	X(rwlock_clockwrlock, "pthread_rwlock_clockwrlock", \
	  (pthread_rwlock_t *l, clockid_t c, const struct timespec *t), (l, c, t), LN_FAIL_PTHREAD) \
	X(rwlock_unlock, "pthread_rwlock_unlock", (pthread_rwlock_t *l), (l), LN_FAIL_PTHREAD) \
	X(cond_wait, "pthread_cond_wait", (pthread_cond_t *c, pthread_mutex_t *m), (c, m), \
	  LN_FAIL_PTHREAD) \
	X(cond_timedwait, "pthread_cond_timedwait", \
	  (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t), (c, m, t), LN_FAIL_PTHREAD) \
	X(cond_clockwait, "pthread_cond_clockwait", \
	  (pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, const struct timespec *t), \
	  (c, m, k, t), LN_FAIL_PTHREAD) \
	X(sem_wait, "sem_wait", (sem_t *s), (s), LN_FAIL_SEM) \
	X(sem_trywait, "sem_trywait", (sem_t *s), (s), LN_FAIL_SEM) \
	X(sem_timedwait, "sem_timedwait", (sem_t *s, const struct timespec *t), (s, t), LN_FAIL_SEM) \
	X(sem_clockwait, "sem_clockwait", (sem_t *s, clockid_t c, const struct timespec *t), (s, c, t), \
	  LN_FAIL_SEM) \
	X(join, "pthread_join", (pthread_t th, void **r), (th, r), LN_FAIL_PTHREAD) \
	X(tryjoin, "pthread_tryjoin_np", (pthread_t th, void **r), (th, r), LN_FAIL_PTHREAD)

#define LOCKNEXT_BOOT(slot, sym, params, args, fail) \
	static int boot_##slot params \
	{ \
		__typeof(lock_next.slot) f = (__typeof(lock_next.slot))locknext_find(sym); \
		if (f == NULL) \
			fail; \
		__atomic_store_n(&lock_next.slot, f, __ATOMIC_RELEASE); \
		return f args; \
	}
LOCKNEXT_LIST(LOCKNEXT_BOOT)

#define LOCKNEXT_INIT(slot, sym, params, args, fail) .slot = boot_##slot,
struct lock_next lock_next = { LOCKNEXT_LIST(LOCKNEXT_INIT) };

#define LOCKNEXT_RESOLVE(slot, sym, params, args, fail) \
	if (__atomic_load_n(&lock_next.slot, __ATOMIC_ACQUIRE) == boot_##slot) { \
		__typeof(lock_next.slot) f = (__typeof(lock_next.slot))locknext_find(sym); \
		if (f != NULL) \
			__atomic_store_n(&lock_next.slot, f, __ATOMIC_RELEASE); \
	}

int lock_inline;

/* Whether f lies in the object that defines glibc's own gnu_get_libc_version. */
static int locknext_in_glibc(void *f)
{
	Dl_info a, b;

	return f && dladdr(f, &a) && dladdr((void *)gnu_get_libc_version, &b) &&
	       a.dli_fbase == b.dli_fbase;
}

void locknext_resolve_all(void)
{
	static int done;
	const char *dbg;
	int in;

	/* A load first: no write to a shared line at every later pthread_create. */
	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE) || __atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	LOCKNEXT_LIST(LOCKNEXT_RESOLVE)
	shim_tls.busy++; /* dladdr takes the loader's lock, as dlsym: nothing else here */
	in = locknext_in_glibc((void *)lock_next.mutex_lock) &&
	     locknext_in_glibc((void *)lock_next.mutex_trylock) &&
	     locknext_in_glibc((void *)lock_next.mutex_unlock);
	shim_tls.busy--;
	in = in && !secure_getenv("CPROF_LOCK_NO_INLINE");
	__atomic_store_n(&lock_inline, in, __ATOMIC_RELEASE);
	dbg = secure_getenv("CPROF_DEBUG");
	if (dbg && *dbg && strcmp(dbg, "0") != 0) {
		const char *line = in ? "libcprof.so: default mutexes taken as glibc takes them\n" :
				        "libcprof.so: mutexes taken through the next pthread_mutex_trylock\n";

		(void)!write(2, line, strlen(line));
	}
}
