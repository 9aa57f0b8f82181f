/*
 * stackhole.c — the stack above an untouched page, for the perf sampler.
 * The ptrace sampler needs none of it: it reads a stopped thread's stack
 * with process_vm_readv, which faults such pages in. Only walks that ran
 * out of copied bytes come here (the recorder decides), after the
 * alternate-stack completion (altstack.h) had its try.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attach/perf/stackhole.h"
#include "common/vmread.h"

int stackhole_init(struct stackhole *h, pid_t pid, size_t cap)
{
	memset(h, 0, sizeof(*h));
	h->pid = pid;
	h->cap = cap;
	h->buf = malloc(cap ? cap : 1);
	return h->buf ? 0 : -1;
}

void stackhole_init_shared(struct stackhole *h, pid_t pid, const struct stackhole *owner)
{
	memset(h, 0, sizeof(*h));
	h->pid = pid;
	h->cap = owner->cap;
	h->buf = owner->buf;
	h->borrowed = 1;
}

void stackhole_release(struct stackhole *h)
{
	if (!h->borrowed)
		free(h->buf);
	h->buf = NULL;
}

/*
 * Up to cap bytes from addr into buf, a page at a time so that the first
 * unreadable page ends it: the number read. Bounded in time (a page the
 * target registered with userfaultfd and never resolves): after the
 * first read that does not return, none is tried again (*dead).
 */
static size_t read_upto(pid_t pid, uint64_t addr, unsigned char *buf, size_t cap, int *dead)
{
	size_t n = 0, k;

	while (n < cap && !*dead) {
		k = STACKHOLE_PAGE - (size_t)((addr + n) % STACKHOLE_PAGE);
		if (k > cap - n)
			k = cap - n;
		if (vm_read_bounded(pid, addr + n, buf + n, k) < 0) {
			*dead = errno == ETIMEDOUT || errno == EINTR;
			break;
		}
		n += k;
	}
	return n;
}

int stackhole_complete(void *ctx, const struct thread_image *img, struct thread_image *out)
{
	struct stackhole *h = ctx;
	const struct stack_region *r0 = &img->stack[0];
	size_t n, edge;

	if (img->nstacks != 1 || !r0->bytes || !h->buf || h->dead || r0->len < STACKHOLE_EDGE ||
	    r0->len >= h->cap || r0->addr + r0->len < r0->addr)
		return -1;
	/* The copy's end again, then all above it that can be read up to the cap. */
	edge = r0->len - STACKHOLE_EDGE;
	n = read_upto(h->pid, r0->addr + edge, h->buf + edge, h->cap - edge, &h->dead);
	if (n <= STACKHOLE_EDGE)
		return -1; /* the stack's end: nothing above the copy */
	if (memcmp(h->buf + edge, r0->bytes + edge, STACKHOLE_EDGE) != 0) {
		h->stale++;
		return -1;
	}
	memcpy(h->buf, r0->bytes, edge);
	*out = *img;
	out->stack[0].len = edge + n;
	out->stack[0].bytes = h->buf;
	h->completed++;
	return 0;
}
