/*
 * stack.c — stack capture for sampled allocations and thread creations
 * with libgcc's DWARF unwinder (_Unwind_Backtrace), which unwinds code
 * built without frame pointers through .eh_frame. Why this unwinder: it is
 * already loaded (libgcc_s, needed by every C++ program), and since
 * gcc 12 with glibc 2.35 it locates unwind tables with _dl_find_object,
 * which is lock-free and allocation-free; older unwinders walk
 * dl_iterate_phdr under the loader lock, which deadlocks against a thread
 * that holds that lock in dlopen and calls malloc. Cost: one CFI step per
 * frame, paid only for sampled allocations (one per 512 KiB allocated by
 * default) and thread creations.
 */
#include "shim/stack.h"

#include <dlfcn.h>
#include <stddef.h>
#include <unwind.h>

#include "shim/segment.h"

static uintptr_t stack_skip_lo, stack_skip_hi;

struct stack_walk {
	uint64_t *frames;
	uint32_t n, max, flags;
	int started; /* 1 once a frame outside the skip range was seen */
};

static _Unwind_Reason_Code stack_step(struct _Unwind_Context *ctx, void *arg)
{
	struct stack_walk *w = arg;
	uintptr_t ip = _Unwind_GetIP(ctx);

	if (ip == 0)
		return _URC_END_OF_STACK;
	if (!w->started) {
		if (ip >= stack_skip_lo && ip < stack_skip_hi)
			return _URC_NO_REASON;
		w->started = 1;
	}
	if (w->n == w->max) {
		w->flags |= SEG_BUCKET_TRUNCATED;
		return _URC_END_OF_STACK;
	}
	w->frames[w->n++] = ip;
	return _URC_NO_REASON;
}

uint32_t stack_capture(uint64_t *frames, uint32_t max, uint32_t *flags)
{
	struct stack_walk w = { frames, 0, max > SEG_MAX_FRAMES ? SEG_MAX_FRAMES : max, 0, 0 };

	/* A failed step (code without unwind info) keeps the frames found so far. */
	(void)_Unwind_Backtrace(stack_step, &w);
	*flags = w.flags;
	return w.n;
}

int stack_object_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
	struct dl_find_object r;

	if (_dl_find_object((void *)addr, &r) != 0)
		return -1;
	*lo = (uintptr_t)r.dlfo_map_start;
	*hi = (uintptr_t)r.dlfo_map_end;
	return 0;
}

void stack_init(uintptr_t lo, uintptr_t hi)
{
	uint64_t frames[SEG_MAX_FRAMES];
	uint32_t flags;

	stack_skip_lo = lo;
	stack_skip_hi = hi;
	(void)stack_capture(frames, SEG_MAX_FRAMES, &flags);
}
