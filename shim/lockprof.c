/*
 * lockprof.c — recording of block and mutex events for the interposed
 * lock functions (lockprof.h). A wait reads the clock when it begins and
 * ends (~20 ns each through the vDSO); a lock's waiter also registers in
 * the side table (shim/waiters.h) so that the thread that releases the
 * lock knows what its waiters accumulated. A recorded event costs one
 * stack capture (~15 instructions a cached frame) and a bucket update
 * under its sequence lock; a block event is recorded always when it
 * lasted at least CPROF_BLOCK_RATE, else with probability duration/rate
 * (shim/contend.h), and a contended release 1 in CPROF_MUTEX_FRACTION
 * times, each with the weight that makes the totals unbiased.
 */
#include "shim/lockprof.h"

#include <errno.h>
#include <time.h>
#include <x86intrin.h>

#include "shim/clock.h"
#include "shim/contend.h"
#include "shim/labels.h"
#include "shim/segment.h"
#include "shim/stack.h"
#include "shim/table.h"
#include "shim/waiters.h"
#include "shim/inject.h"

uint64_t lockprof_block_rate;
uint64_t lockprof_mutex_fraction;

static struct sample_rng *lockprof_rng(struct shim_thread *t)
{
	if (!t->wseeded) {
		sample_seed(&t->wrng, (uint64_t)(uintptr_t)t ^ __rdtsc() ^ 0x6A09E667F3BCC909ull);
		t->wseeded = 1;
	}
	return &t->wrng;
}

/* May this thread record now? Not while the shim works, and only READY. */
static int lockprof_may(const struct shim_thread *t)
{
	return !t->busy && __atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) == SHIM_READY &&
	       (!shim_late || __atomic_load_n(&inject_armed, __ATOMIC_ACQUIRE));
}

/*
 * Records into a new or existing bucket of kind at the calling thread's
 * stack. Inlined into its callers, so that stack_capture (always inline)
 * adds no frame of its own; the shim's frames are skipped by address.
 * The bucket, or -1.
 */
static inline __attribute__((always_inline)) int32_t
lockprof_record(uint32_t kind, uint32_t prim, uint64_t events, uint64_t ns, double contentions,
		double delay)
{
	uint64_t frames[SEG_MAX_FRAMES];
	uint32_t flags, n;
	int32_t b;

	if (!shim_activate_quiet())
		return -1;
	n = stack_capture(frames, SEG_MAX_FRAMES, &flags);
	flags |= (prim << SEG_BUCKET_PRIM_SHIFT) & SEG_BUCKET_PRIM_MASK;
	b = table_bucket_labeled(kind, flags, labels_current(), frames, n);
	if (b >= 0)
		table_add_wait(b, events, ns, contentions, delay);
	return b;
}

void lockprof_enter(const void *lock, uint32_t prim, struct lockprof_wait *w)
{
	struct shim_thread *t = &shim_tls;

	w->followed = 0;
	w->prim = prim;
	inject_check(); /* an injected shim whose reader went quiet disarms itself */
	w->on = lockprof_may(t) && (lockprof_block_rate != 0 ||
				    (lock != NULL && lockprof_mutex_fraction != 0));
	if (!w->on)
		return;
	if (lock == NULL || lockprof_mutex_fraction == 0) {
		w->t0 = shim_mono_ns();
		return;
	}
	t->busy++; /* a signal handler's lock call must not meet the slot's lock held */
	if (waiters_enter(lock, &w->t0) == 0) {
		w->followed = 1;
	} else {
		int saved = errno;

		table_count_untracked();
		errno = saved;
	}
	t->busy--;
}

void lockprof_leave(const void *lock, struct lockprof_wait *w, int counted)
{
	struct shim_thread *t = &shim_tls;
	struct waiters_tail tail;
	uint64_t t1, d;
	double weight;
	int saved;

	if (!w->on)
		return;
	saved = errno;
	t->busy++;
	if (w->followed) {
		t1 = waiters_leave(lock, w->t0, &tail);
		/* The remainder since the last release goes to that release, if recorded. */
		if (tail.bucket >= 0 && tail.ns > 0)
			table_add_wait(tail.bucket, 0, tail.ns, 0.0, (double)tail.ns * tail.weight);
	} else {
		t1 = shim_mono_ns();
	}
	t->busy--;
	if (counted && lockprof_may(t)) {
		d = t1 > w->t0 ? t1 - w->t0 : 0;
		weight = contend_block_weight(lockprof_rng(t), d, lockprof_block_rate);
		if (weight > 0) {
			if (d == 0)
				d = 1;
			t->busy++;
			(void)lockprof_record(SEG_KIND_BLOCK, w->prim, 1, d, weight, (double)d * weight);
			t->busy--;
		}
	}
	errno = saved;
}

void lockprof_release_begin(const void *lock, struct lockprof_release *r)
{
	struct shim_thread *t = &shim_tls;
	struct waiters_charge c;
	uint64_t n = lockprof_mutex_fraction;
	int saved, ready;

	r->on = 0;
	r->record = 0;
	if (t->busy || n == 0)
		return; /* the next release takes the delay over */
	saved = errno;
	t->busy++;
	ready = __atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) == SHIM_READY;
	if (waiters_release(lock, ready && contend_mutex_take(lockprof_rng(t), n),
			    ready ? CONTEND_MUTEX_KEEP_NS : 0, &c)) {
		r->on = 1;
		r->record = c.record;
		r->weight = contend_mutex_weight(c.by_size, n);
		r->gen = c.gen;
		r->delay = c.delay;
	}
	t->busy--;
	errno = saved;
}

void lockprof_release_end(const void *lock, struct lockprof_release *r, int ok)
{
	struct shim_thread *t = &shim_tls;
	double w = (double)r->weight;
	uint64_t carry;
	int32_t b = -1;
	int saved;

	if (!r->on || !r->record)
		return;
	saved = errno;
	t->busy++;
	if (ok && r->delay > 0)
		b = lockprof_record(SEG_KIND_MUTEX, 0, 1, r->delay, w, (double)r->delay * w);
	carry = waiters_settle(lock, r->gen, b, r->weight);
	if (b >= 0 && carry > 0)
		table_add_wait(b, 0, carry, 0.0, (double)carry * w);
	t->busy--;
	errno = saved;
}
