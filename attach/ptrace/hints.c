/*
 * hints.c — per-thread stack copy ends. Slots are indexed by tid modulo
 * the table size: tids of one process are dense, so collisions are rare,
 * and a collision merely costs a copy of the full cap (the other thread's
 * end is not within reach of this one's sp) or one short copy.
 */
#include "attach/ptrace/hints.h"

void hints_init(struct stack_hints *h, size_t cap)
{
	size_t i;

	h->cap = cap;
	for (i = 0; i < HINTS_SLOTS; i++) {
		atomic_store_explicit(&h->slot[i], 0, memory_order_relaxed);
		atomic_store_explicit(&h->alt_end[i], 0, memory_order_relaxed);
		atomic_store_explicit(&h->alt_frame[i], 0, memory_order_relaxed);
	}
}

size_t hints_get(struct stack_hints *h, pid_t tid, uint64_t sp, int *known)
{
	uint64_t end = atomic_load_explicit(&h->slot[(uint32_t)tid % HINTS_SLOTS],
					    memory_order_relaxed);
	uint64_t n;

	*known = 0;
	if (!end || end <= sp || end - sp > h->cap)
		return h->cap;
	*known = 1;
	n = end - sp + HINTS_MARGIN;
	if (n < HINTS_MIN)
		n = HINTS_MIN;
	return n < h->cap ? n : h->cap;
}

void hints_note(struct stack_hints *h, pid_t tid, uint64_t sp, uint64_t end, int complete,
		int overran)
{
	_Atomic uint64_t *s = &h->slot[(uint32_t)tid % HINTS_SLOTS];
	uint64_t cur = atomic_load_explicit(s, memory_order_relaxed), want;

	if (overran || end < sp) {
		want = 0;
	} else if (complete) {
		want = end;
	} else {
		/* Stopped early: the next walk may get further. */
		want = end + (end - sp) / 2 + 1024;
		if (want < end)
			want = 0;
		else if (cur > want && cur - sp <= h->cap)
			want = cur;
	}
	atomic_store_explicit(s, want, memory_order_relaxed);
}

void hints_alt_get(struct stack_hints *h, pid_t tid, uint64_t *frame, uint64_t *end)
{
	uint32_t i = (uint32_t)tid % HINTS_SLOTS;

	*end = atomic_load_explicit(&h->alt_end[i], memory_order_relaxed);
	*frame = atomic_load_explicit(&h->alt_frame[i], memory_order_relaxed);
}

void hints_alt_set(struct stack_hints *h, pid_t tid, uint64_t frame, uint64_t end)
{
	uint32_t i = (uint32_t)tid % HINTS_SLOTS;

	atomic_store_explicit(&h->alt_end[i], end, memory_order_relaxed);
	atomic_store_explicit(&h->alt_frame[i], frame, memory_order_relaxed);
}
