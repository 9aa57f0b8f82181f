/*
 * altstack.c — the interrupted stack under a handler on an alternate
 * signal stack, for the perf sampler. The ptrace sampler does the same
 * with the thread stopped (attach/ptrace/stackcopy.c); here the thread
 * runs on, hence the second read of the frame. Only stacks whose walk
 * crossed a signal frame and then ran out of bytes come here (the
 * recorder decides), so the search over the copy and the two reads are
 * paid by those samples alone.
 */
#include <stdlib.h>
#include <string.h>

#include "attach/ptrace/sigframe.h"
#include "attach/perf/altstack.h"
#include "common/vmread.h"

int altstack_init(struct altstack *a, pid_t pid, size_t cap)
{
	memset(a, 0, sizeof(*a));
	a->pid = pid;
	a->cap = cap;
	a->buf = malloc(cap ? cap : 1);
	return a->buf ? 0 : -1;
}

void altstack_init_shared(struct altstack *a, pid_t pid, const struct altstack *owner)
{
	memset(a, 0, sizeof(*a));
	a->pid = pid;
	a->cap = owner->cap;
	a->buf = owner->buf;
	a->borrowed = 1;
}

void altstack_release(struct altstack *a)
{
	if (!a->borrowed)
		free(a->buf);
	a->buf = NULL;
}

/*
 * A thread sampled at the trampoline itself (its handler has returned,
 * sigreturn is next) has popped the frame's return-address word: the
 * frame starts 8 bytes below sp, just outside the copy, and that word is
 * the trampoline's start (sigframe_popped()). Rebuild the frame's first
 * bytes from it and the copy. 0 and *f, or -1.
 */
static int popped_frame(struct altstack *a, const struct thread_image *img, struct sigframe *f)
{
	const struct stack_region *r0 = &img->stack[0];
	unsigned char b[SIGFRAME_LEN];
	uint64_t start;

	if (r0->len < sizeof(b) - 8 || r0->addr < 8 ||
	    sigframe_popped(a->pid, &a->restorer, img->regs.r[DWARF_RIP], &start) < 0)
		return -1;
	memcpy(b, &start, 8);
	memcpy(b + 8, r0->bytes, sizeof(b) - 8);
	return sigframe_check(b, r0->addr - 8, sizeof(b), r0->addr - 8, f);
}

int altstack_complete(void *ctx, const struct thread_image *img, struct thread_image *out)
{
	struct altstack *a = ctx;
	const struct stack_region *r0 = &img->stack[0];
	unsigned char again[SIGFRAME_LEN];
	struct sigframe f, now;
	size_t n, len0;

	if (img->nstacks != 1 || !r0->bytes || !a->buf)
		return -1;
	if ((sigframe_find(r0->bytes, r0->addr, r0->len, &f) < 0 && popped_frame(a, img, &f) < 0) ||
	    !sigframe_restorer(a->pid, &a->restorer, f.restorer))
		return -1;
	n = a->cap;
	if (f.sp < f.alt_lo && f.alt_lo - f.sp < n)
		n = (size_t)(f.alt_lo - f.sp); /* up to the alternate stack, not into it */
	n = vm_read_upto(a->pid, f.sp, a->buf, n);
	if (n == 0)
		return -1;
	/*
	 * The frame there now: the same one, or a later signal's that
	 * interrupted the thread at the same stack pointer. Any other sp: the
	 * thread has moved on from where the sample found it, and the bytes
	 * just read may be another call's.
	 */
	if (vm_read(a->pid, f.addr, again, sizeof(again)) < 0 ||
	    sigframe_check(again, f.addr, sizeof(again), f.addr, &now) < 0 || now.sp != f.sp) {
		a->stale++;
		return -1;
	}
	len0 = r0->len;
	if (f.alt_hi > r0->addr && f.alt_hi - r0->addr < len0)
		len0 = (size_t)(f.alt_hi - r0->addr);
	*out = *img;
	out->stack[0].len = len0;
	out->stack[1].addr = f.sp;
	out->stack[1].len = n;
	out->stack[1].bytes = a->buf;
	out->nstacks = 2;
	a->completed++;
	return 0;
}
