#ifndef CPROF_PERF_STACKHOLE_H
#define CPROF_PERF_STACKHOLE_H
/*
 * stackhole — completing a perf sample whose copy of the user stack ended
 * at a page that was never touched. The kernel copies the user stack from
 * sp up without faulting pages in, so it stops at the first page not
 * present: a function whose frame holds a large buffer used only at its
 * low end (a 16 KiB header buffer, an iovec array) leaves such pages
 * between the frames below it and its callers, and the walk ends
 * "[partial: stack not copied]". The rest, up to the stack cap, is read
 * from the target's memory when the sample is handled, without stopping
 * anything.
 *
 * Invariants:
 *  - only a copy shorter than the cap is completed (a full copy is a deep
 *    stack, cut where the user asked), and never past the cap: at most
 *    cap bytes a sample, in a buffer of its own; nothing else is
 *    allocated after stackhole_init();
 *  - reading an untouched page of the target maps the shared zero page
 *    there (a read fault), which uses no memory and changes nothing the
 *    target can see;
 *  - the bytes are read when the sample is handled (a few ms to 100 ms
 *    after it was taken): exact while the thread is still in the frame
 *    the hole is in. The last STACKHOLE_EDGE bytes of the kernel's copy
 *    are read again with the rest and must be unchanged, or the
 *    completion is refused (counted in stale): a thread that has moved on
 *    has usually rewritten them. A thread that returned without touching
 *    them and now runs above with other frames is not caught; the
 *    unwinder's call-site checks catch most bytes that are not a stack
 *    (doc/limits.md);
 *  - every byte read is untrusted: the unwinder walks it with its bounds;
 *  - every read is bounded in time (vm_read_bounded(): a page registered
 *    with userfaultfd and never resolved holds a read for ever): after
 *    one that does not return, no completion is tried again (dead).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwinder.h"

#define STACKHOLE_EDGE 64   /* bytes of the copy's end read again */
#define STACKHOLE_PAGE 4096 /* reads go a page at a time: the first unreadable one ends them */

struct stackhole {
	pid_t pid;
	size_t cap;         /* bytes of stack from sp, at most */
	unsigned char *buf; /* cap bytes: the last completion's stack */
	int borrowed;       /* buf is another's (stackhole_init_shared) */
	uint64_t completed; /* samples given the stack above their copy */
	uint64_t stale;     /* refused: the copy's end changed before the read */
	int dead;           /* a read did not return in time: no more completions */
};

/* Ready h to complete samples of process pid up to cap bytes of stack: 0 or -1. */
int stackhole_init(struct stackhole *h, pid_t pid, size_t cap);

/*
 * The same for another process of one capture, with owner's buffer: a
 * completion is used before the next one is made, so the processes of a
 * family (at most CHILDREN_MAX) take one buffer, not one each. owner
 * outlives h.
 */
void stackhole_init_shared(struct stackhole *h, pid_t pid, const struct stackhole *owner);

/* Free what stackhole_init() took. */
void stackhole_release(struct stackhole *h);

/*
 * A recorder's refill function (attach/source/record.h): ctx is a struct
 * stackhole. From img (one region, from sp up, shorter than the cap),
 * build out: that region, then the target's stack above it up to the cap.
 * 0, or -1 when there is nothing to add or the read is refused.
 */
int stackhole_complete(void *ctx, const struct thread_image *img, struct thread_image *out);

#endif
