#ifndef CPROF_PERF_ALTSTACK_H
#define CPROF_PERF_ALTSTACK_H
/*
 * altstack — completing a perf sample taken in a signal handler that runs
 * on an alternate signal stack. The kernel copies the user stack from sp
 * up, which is the alternate stack alone: the frames the handler
 * interrupted are on the thread's own stack, elsewhere. When the copy
 * holds the kernel's signal frame (attach/ptrace/sigframe.h), the
 * interrupted stack is read from the target's memory, from the saved sp
 * up, without stopping anything.
 *
 * Invariants:
 *  - the interrupted stack is read when the sample is handled, a few ms
 *    to 100 ms after it was taken: exact while the handler still runs,
 *    but a handler that has returned leaves the interrupted frames as
 *    they are now. So the signal frame at the same place is read again
 *    after the stack, and the completion is refused (counted in stale)
 *    unless it holds the same interrupted sp: the same frame, or a later
 *    signal's that found the thread at the same depth (a thread that
 *    spins in one function, interrupted again and again). A thread that
 *    moved away and came back to the same sp without a signal in between
 *    is not caught; the unwinder's call-site checks catch most bytes that
 *    are not a stack (doc/limits.md);
 *  - at most cap bytes of interrupted stack per sample, in a buffer of
 *    its own; nothing else is allocated after altstack_init();
 *  - every byte read is untrusted: the frame is checked field by field
 *    (sigframe_check()) and its return address must be the kernel's
 *    rt_sigreturn trampoline.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwinder.h"

struct altstack {
	pid_t pid;
	size_t cap;             /* bytes of interrupted stack read at most */
	unsigned char *buf;     /* cap bytes: the last completion's interrupted stack */
	int borrowed;           /* buf is another's (altstack_init_shared) */
	uint64_t restorer;      /* the trampoline's address, once found */
	uint64_t completed;     /* samples given their interrupted stack */
	uint64_t stale;         /* refused: the frame changed while it was read */
};

/* Ready a to complete samples of process pid with up to cap bytes of stack: 0 or -1. */
int altstack_init(struct altstack *a, pid_t pid, size_t cap);

/* The same for another process of one capture, with owner's buffer (see stackhole_init_shared). */
void altstack_init_shared(struct altstack *a, pid_t pid, const struct altstack *owner);

/* Free what altstack_init() took. */
void altstack_release(struct altstack *a);

/*
 * A recorder's refill function (attach/source/record.h): ctx is a struct
 * altstack. From img (one region, from sp up), build out: the alternate
 * stack up to its end, then the interrupted stack. 0, or -1 when img holds
 * no valid signal frame or the interrupted stack cannot be read.
 */
int altstack_complete(void *ctx, const struct thread_image *img, struct thread_image *out);

#endif
