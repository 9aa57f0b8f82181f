#ifndef CPROF_SHIM_SHIM_H
#define CPROF_SHIM_SHIM_H
/*
 * shim — what the interposition files (malloc.c, thread.c, init.c) share:
 * the per-thread sampling state, the shim's life-cycle state, and the real
 * allocator.
 *
 * Invariants:
 *  - shim_tls is initial-exec TLS (static TLS block, one %fs-relative
 *    access, no __tls_get_addr, never allocates); a new thread's copy is
 *    all zero, so its first allocation takes the slow path, which seeds it;
 *  - shim_tls.busy > 0 while the shim itself works (unwinding, table
 *    updates, dlsym, fork handlers, the lock side table): an allocation
 *    then goes straight to the real allocator unsampled, a free skips the
 *    block table, and a lock function goes straight to the real one
 *    unrecorded, so nothing re-enters the shim;
 *  - shim_state goes INIT -> STARTING -> READY or OFF once (in the
 *    constructor), and READY -> OFF only when activation fails (or finds
 *    an unsupported allocator) or in a fork child whose new segment
 *    failed. Outside READY nothing is sampled or recorded and the shim is a
 *    pass-through;
 *  - READY is armed, not active: the segment, tables and pool are made by
 *    shim_activate() at the first sample point (or pthread_create), once;
 *    until then nothing of them exists;
 *  - the real allocator is whatever the program would use without the
 *    shim (glibc's, or jemalloc's, tcmalloc's, mimalloc's...), reached
 *    through shim_next (shim/next.h), which is usable from the very first
 *    allocation, before any constructor has run.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/sample.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_HIDDEN __attribute__((visibility("hidden")))
#define SHIM_PAGE 4096u /* x86-64 page; sampled blocks from glibc are aligned to it */

enum { SHIM_INIT = 0, SHIM_READY = 1, SHIM_OFF = 2, SHIM_STARTING = 3 };

struct shim_thread {
	uint64_t left;          /* bytes until the next sample point (sample.h) */
	struct sample_rng rng;  /* this thread's PRNG */
	uint32_t busy;          /* recursion guard: > 0 while the shim works */
	uint32_t seeded;        /* rng seeded and left drawn */
	struct sample_rng wrng; /* the block and mutex profiles' PRNG (shim/lockprof.c) */
	uint32_t wseeded;       /* wrng seeded */
	int tid;                /* gettid(), 0 until read (shim/locks.c); reset at fork */
};

extern __thread struct shim_thread shim_tls
	__attribute__((tls_model("initial-exec"))) SHIM_HIDDEN;
extern int shim_state SHIM_HIDDEN;       /* SHIM_*; read with acquire */
extern uint64_t shim_rate SHIM_HIDDEN;   /* CPROF_SAMPLE_RATE, fixed after init */

/*
 * The shim's own malloc (a hidden alias): when "malloc" binds elsewhere,
 * the program's own allocator comes ahead of the shim.
 */
void *shim_own_malloc(size_t n) SHIM_HIDDEN;

/* Runs the constructor's work now if it has not run yet (idempotent). */
void shim_init(void) SHIM_HIDDEN;

/*
 * shim_activate for the lock functions: never takes the dynamic loader's
 * lock (no dlsym), since the caller may hold a lock that a thread inside
 * dlopen waits for. If activation happens here, the choice of the
 * fallback unwinder (stack_pick_unwinder) is left to the next sampled
 * allocation. 0 also when the allocator is not resolved yet.
 */
int shim_activate_quiet(void) SHIM_HIDDEN;

/*
 * Creates the segment, tables and pool on first use (once; syscalls only,
 * safe inside malloc with the guard raised). 1 when sampling is active; 0
 * when another thread is activating right now, or when activation failed
 * (shim_state is then SHIM_OFF).
 */
int shim_activate(void) SHIM_HIDDEN;

/* The real pthread_create, resolved like shim_real_usable; NULL if not found. */
typedef int (*shim_pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				      void *);
shim_pthread_create_fn shim_real_pthread_create(void) SHIM_HIDDEN;

#endif
