/*
 * hints.c — per-thread stack copy sizes. Slots are indexed by tid modulo
 * the table size: tids of one process are dense, so collisions are rare,
 * and a collision merely shares a hint. Headroom is half the depth used
 * plus 1 KiB, so a stack must grow by more than half between two samples
 * of the same thread to be cut short — and then only once.
 */
#include "attach/hints.h"

void hints_init(struct stack_hints *h, size_t cap)
{
	size_t i;

	h->cap = cap;
	for (i = 0; i < HINTS_SLOTS; i++)
		atomic_store_explicit(&h->slot[i], 0, memory_order_relaxed);
}

size_t hints_get(struct stack_hints *h, pid_t tid)
{
	uint32_t v = atomic_load_explicit(&h->slot[(uint32_t)tid % HINTS_SLOTS],
					  memory_order_relaxed);

	return v ? v : h->cap;
}

void hints_note(struct stack_hints *h, pid_t tid, size_t used, int overran)
{
	_Atomic uint32_t *s = &h->slot[(uint32_t)tid % HINTS_SLOTS];
	size_t cur = atomic_load_explicit(s, memory_order_relaxed), want;

	if (overran) {
		want = h->cap;
	} else {
		want = used + used / 2 + 1024;
		want = (want + 511) & ~(size_t)511;
		if (cur && want < cur)
			want = cur - (cur - want) / 8; /* shrink slowly */
	}
	if (want < HINTS_MIN)
		want = HINTS_MIN;
	if (want > h->cap)
		want = h->cap;
	atomic_store_explicit(s, (uint32_t)want, memory_order_relaxed);
}
