/*
 * stackhole.c — the stack above an untouched page, for the perf sampler.
 * The ptrace sampler needs none of it: it reads a stopped thread's stack
 * with process_vm_readv, which faults such pages in. Only walks that ran
 * out of copied bytes come here (the recorder decides), after the
 * alternate-stack completion (altstack.h) had its try.
 */
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

void stackhole_release(struct stackhole *h)
{
	free(h->buf);
	h->buf = NULL;
}

int stackhole_complete(void *ctx, const struct thread_image *img, struct thread_image *out)
{
	struct stackhole *h = ctx;
	const struct stack_region *r0 = &img->stack[0];
	size_t n, edge;

	if (img->nstacks != 1 || !r0->bytes || !h->buf || r0->len < STACKHOLE_EDGE ||
	    r0->len >= h->cap || r0->addr + r0->len < r0->addr)
		return -1;
	/* The copy's end again, then all above it that can be read up to the cap. */
	edge = r0->len - STACKHOLE_EDGE;
	n = vm_read_upto(h->pid, r0->addr + edge, h->buf + edge, h->cap - edge);
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
