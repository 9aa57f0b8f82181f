#ifndef CPROF_SHIM_LOCK_H
#define CPROF_SHIM_LOCK_H
/*
 * lock — the shim's one lock type: a test-and-test-and-set spinlock that
 * yields the CPU after a short spin.
 *
 * Invariants:
 *  - every shim lock is a leaf: while one is held, the holder calls nothing
 *    outside the shim (no allocator, no unwinder, no libc but sched_yield),
 *    so no lock order with glibc's malloc or loader locks can exist;
 *  - it lives in static or mmap'd memory, needs no initialisation beyond
 *    zero, allocates nothing and is reset to 0 in a fork child;
 *  - it is held for well under a microsecond (a hash probe), so spinning
 *    is cheaper than a futex; sched_yield bounds the waste when the holder
 *    was preempted.
 */
#include <sched.h>

/* Takes l; acquire ordering. */
static inline void lock_take(int *l)
{
	unsigned spins = 0;

	for (;;) {
		if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
			return;
		while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
			if (++spins < 64)
				__builtin_ia32_pause();
			else
				sched_yield();
		}
	}
}

/* Releases l; release ordering. */
static inline void lock_give(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif
