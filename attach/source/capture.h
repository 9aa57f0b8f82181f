#ifndef CPROF_SOURCE_CAPTURE_H
#define CPROF_SOURCE_CAPTURE_H
/*
 * capture — the skeleton every source's capture() runs around its own
 * sampling, so that a source holds only its sampling loop: the report
 * zeroed and the profile made with the request's types, the first
 * refusals and their exit codes, the children's CPU for the "the
 * workers did it" note, and the end (the profile's time, the attacher's
 * own CPU, the note, the profile handed out). A source's capture() reads:
 *
 *	capture_open(&cx, q, rep, out);
 *	if ((code = capture_profile(&cx, period)) != EXIT_OK) goto out;
 *	... open the target: a failed first read is capture_map_failed() ...
 *	capture_children_mark(&cx, pid);
 *	capture_nice(&cx, nice);        (the window's priority, if its own)
 *	... its own sampling, filling cx.prof and rep ...
 *	capture_nice_end(&cx);
 *	code = capture_close(&cx, pid, comm, cpu_process_ns, out);
 *    out:
 *	capture_release(&cx);
 *
 * Invariants:
 *  - *out is NULL until capture_close() hands the profile out; on every
 *    other path capture_release() frees it;
 *  - every message is one line naming the target (common/err.h), printed
 *    once, here or in the source, never both;
 *  - the calling thread's priority is its own again after
 *    capture_nice_end() or capture_release(), whatever capture_nice() and
 *    the start's hurry (common/hurry.h) set.
 */
#include <stdint.h>
#include <sys/types.h>

#include "attach/source/source.h"

struct child_cpu;
struct profile;
struct target;

struct capture {
	const struct capture_req *q;
	struct capture_report *rep;
	struct profile *prof;   /* NULL until capture_profile() */
	struct child_cpu *kids; /* the children's CPU at the start, or NULL */
	int nkids;
	int niced;              /* capture_nice() changed this thread's priority... */
	int nice_was;           /* ... from this one */
};

/* Begin: *out NULL, rep zeroed, nothing made yet. */
void capture_open(struct capture *cx, const struct capture_req *q, struct capture_report *rep,
		  struct profile **out);

/*
 * The profile, with the request's sample types and period (a source that
 * learns its period from the target calls this once it knows it).
 * EXIT_OK, or EXIT_INTERNAL after "out of memory".
 */
int capture_profile(struct capture *cx, int64_t period);

/*
 * The first read of the target (its memory map) failed with errno e: a
 * target gone or forbidden gets capture_begin_failed()'s message and
 * code, anything else "cannot read the memory map of PID" and
 * EXIT_INTERNAL.
 */
int capture_map_failed(const struct target *t, int e);

/*
 * A profile of running code that finds nothing may be of a master whose
 * children do the work: their CPU now, for capture_close()'s note. Not
 * with --children (they are in the profile).
 */
void capture_children_mark(struct capture *cx, pid_t pid);

/*
 * The end of a capture that worked: the profile's time (rep's start and
 * duration), the attacher's own CPU, the children's note (cpu_process_ns:
 * the target's CPU over the window), and the profile to *out. EXIT_OK.
 */
int capture_close(struct capture *cx, pid_t pid, const char *comm, uint64_t cpu_process_ns,
		  struct profile **out);

/*
 * The calling thread at nice for the sampling window: the start's hurry
 * ends, and a source whose window needs the CPU sooner (a ring reader) or
 * later (a consumer the tracer must not wait for) says how much. 0, or -1
 * when the kernel refused (the thread then keeps its own priority).
 */
int capture_nice(struct capture *cx, int nice);

/* The window is over: the calling thread back at its own priority. */
void capture_nice_end(struct capture *cx);

/* Free what capture_close() did not hand out; the priority as capture_nice_end(). */
void capture_release(struct capture *cx);

#endif
