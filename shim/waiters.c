/*
 * waiters.c — the side table of contended locks (waiters.h): a slot per
 * lock address hash, claimed by a lock's first waiter and freed by its
 * last. A slot keeps how many threads wait, the sum of their effective
 * start times (the later of arrival and the last release), so that a
 * release computes what its waiters accumulated in O(1) as
 * nwait * now - sum, and the bucket of the last recorded release, which a
 * leaving waiter's remainder is charged to. Memory: 64 KiB of keys, read
 * by unlocks (one word each), and 512 KiB of slots, one cache line each so
 * that two contended locks never share a line; both in .bss, so a process
 * that never contends touches none of it, and a page only when a lock
 * hashing into it is contended. Cost on a contended path: the slot's leaf
 * lock and one clock read (~50 ns). Fork: a slot, and its lock, belong to
 * an epoch; a fork child starts a new one (one store), and a slot of an
 * older epoch is free, whatever it held, the first time it is touched.
 */
#include "shim/waiters.h"

#include <sched.h>
#include <time.h>

#include "shim/clock.h"

struct waiters_slot {
	uint32_t lock;       /* leaf lock over everything below: 0 free, else the epoch that holds it */
	uint32_t epoch;      /* the epoch the contents belong to */
	uint32_t nwait;      /* threads waiting */
	uintptr_t addr;      /* the lock that owns the slot, 0: free (== waiters_keys[i]) */
	uint64_t sum;        /* sum of the waiters' effective start times */
	uint64_t mark;       /* time of the last release, 0: none since claimed */
	int32_t last;        /* the last release's bucket: -1 not recorded, WAITERS_PENDING */
	uint32_t weight;     /* its weight */
	uint32_t gen;        /* releases since claimed */
	uint32_t carry_gen;  /* the pending release that carry belongs to, 0: none */
	uint64_t carry;      /* remainders that left while that release was being recorded */
} __attribute__((aligned(64)));

uintptr_t waiters_keys[WAITERS_SLOTS];
static struct waiters_slot waiters_slots[WAITERS_SLOTS];
static uint32_t waiters_nowned; /* slots owned in this epoch (atomic) */
static uint32_t waiters_epoch = 1; /* never 0; a fork child moves on */

/*
 * Takes slot i's lock, a test-and-test-and-set spinlock like shim/lock.h's
 * whose word is the epoch of its holder: one held since before a fork
 * (an older epoch) is free. A slot whose contents are of an older epoch
 * is emptied.
 */
static struct waiters_slot *waiters_take(uint32_t i)
{
	struct waiters_slot *s = &waiters_slots[i];
	uint32_t e = __atomic_load_n(&waiters_epoch, __ATOMIC_RELAXED), cur;
	unsigned spins = 0;

	for (;;) {
		cur = __atomic_load_n(&s->lock, __ATOMIC_RELAXED);
		if ((cur == 0 || cur != e) &&
		    __atomic_compare_exchange_n(&s->lock, &cur, e, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
		if (++spins < 64)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
	if (s->epoch != e) {
		s->epoch = e;
		s->addr = 0;
		s->nwait = 0;
		__atomic_store_n(&waiters_keys[i], 0, __ATOMIC_RELAXED);
	}
	return s;
}

static void waiters_give(struct waiters_slot *s)
{
	__atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
}

uint64_t (*waiters_clock)(void) = shim_mono_ns;

/* Frees slot i (its lock held, nobody waiting). */
static void waiters_free(struct waiters_slot *s, uint32_t i)
{
	s->addr = 0;
	__atomic_store_n(&waiters_keys[i], 0, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&waiters_nowned, 1, __ATOMIC_RELAXED);
}

int waiters_enter(const void *lock, uint64_t *t0)
{
	uint32_t i = waiters_slot(lock);
	struct waiters_slot *s = waiters_take(i);
	uint64_t now;

	if (s->addr == 0) {
		s->addr = (uintptr_t)lock;
		s->nwait = 0;
		s->sum = 0;
		s->mark = 0;
		s->last = -1;
		s->weight = 0;
		s->gen = 0;
		s->carry_gen = 0;
		s->carry = 0;
		__atomic_store_n(&waiters_keys[i], (uintptr_t)lock, __ATOMIC_RELAXED);
		__atomic_fetch_add(&waiters_nowned, 1, __ATOMIC_RELAXED);
	} else if (s->addr != (uintptr_t)lock) {
		waiters_give(s);
		*t0 = waiters_clock();
		return -1;
	}
	now = waiters_clock();
	s->nwait++;
	s->sum += now;
	waiters_give(s);
	*t0 = now;
	return 0;
}

uint64_t waiters_leave(const void *lock, uint64_t t0, struct waiters_tail *tail)
{
	uint32_t i = waiters_slot(lock);
	struct waiters_slot *s;
	uint64_t now, eff;

	tail->bucket = -1;
	tail->weight = 0;
	tail->ns = 0;
	s = waiters_take(i);
	now = waiters_clock();
	if (s->addr != (uintptr_t)lock || s->nwait == 0) {
		waiters_give(s); /* emptied by a fork since this thread entered */
		return now;
	}
	eff = t0 > s->mark ? t0 : s->mark;
	s->sum -= eff;
	s->nwait--;
	tail->ns = now > eff ? now - eff : 0;
	if (s->last >= 0) {
		tail->bucket = s->last;
		tail->weight = s->weight;
	} else if (s->last == WAITERS_PENDING && s->carry_gen == s->gen) {
		s->carry += tail->ns; /* for waiters_settle to hand to the releaser */
	}
	if (s->nwait == 0 && s->last != WAITERS_PENDING && s->carry_gen == 0)
		waiters_free(s, i);
	waiters_give(s);
	return now;
}

int waiters_release(const void *lock, int draw, uint64_t keep_ns, struct waiters_charge *c)
{
	uint32_t i = waiters_slot(lock);
	struct waiters_slot *s = waiters_take(i);
	uint64_t now;
	int record;

	if (s->addr != (uintptr_t)lock || s->nwait == 0) {
		waiters_give(s);
		return 0;
	}
	now = waiters_clock();
	/* Every effective start is <= now: each was read under this lock, earlier. */
	c->delay = (uint64_t)s->nwait * now - s->sum;
	c->nwait = s->nwait;
	c->gen = ++s->gen;
	c->by_size = keep_ns && c->delay >= keep_ns;
	c->record = record = draw || c->by_size;
	s->sum = (uint64_t)s->nwait * now;
	s->mark = now;
	/* A carry of an earlier release still being recorded stays its own. */
	if (s->last != WAITERS_PENDING || s->carry_gen == 0) {
		s->carry_gen = record ? c->gen : 0;
		s->carry = 0;
	}
	s->last = record ? WAITERS_PENDING : -1;
	s->weight = 0;
	waiters_give(s);
	return 1;
}

uint64_t waiters_settle(const void *lock, uint32_t gen, int32_t bucket, uint32_t weight)
{
	uint32_t i = waiters_slot(lock);
	struct waiters_slot *s = waiters_take(i);
	uint64_t carry = 0;

	if (s->addr == (uintptr_t)lock) {
		if (s->carry_gen == gen) {
			carry = s->carry;
			s->carry = 0;
			s->carry_gen = 0;
		}
		if (s->gen == gen && s->last == WAITERS_PENDING) {
			s->last = bucket >= 0 ? bucket : -1;
			s->weight = weight;
		}
		/* Free once nobody waits and no release is still being recorded. */
		if (s->nwait == 0 && s->last != WAITERS_PENDING && s->carry_gen == 0)
			waiters_free(s, i);
	}
	waiters_give(s);
	return carry;
}

uint32_t waiters_owned(void)
{
	return __atomic_load_n(&waiters_nowned, __ATOMIC_RELAXED);
}

void waiters_fork_child(void)
{
	uint32_t e = waiters_epoch + 1;

	/* Every slot and slot lock of the parent's is now of an older epoch: free. */
	waiters_epoch = e != 0 ? e : 1;
	waiters_nowned = 0;
}
