#ifndef CPROF_TEXT_H
#define CPROF_TEXT_H
/*
 * text — the text forms of a profile: Go's legacy debug=1 count profile,
 * which pprof still parses, and a thread dump for people (Go's debug=2
 * spirit, the way pstack or eu-stack print).
 *
 * Invariants:
 *  - output is appended to a struct buf, so a failure writes nothing
 *    anywhere else;
 *  - the count form's "@" lines hold return addresses for non-leaf frames
 *    (the model's call site + 1), because pprof's legacy parser subtracts
 *    one from every non-leaf address; its "#" lines hold call sites, as Go
 *    prints them;
 *  - every string printed comes from the profile; names, paths and the
 *    thread's name are printed with their control bytes escaped as \xNN
 *    (common/sanitize.h: a target chooses them, a terminal reads them),
 *    labels quoted like Go's %q.
 */
#include "common/buf.h"

struct profile;

/*
 * "NAME profile: total N", then one record per distinct stack and label
 * set, most frequent first: "COUNT @ ADDR...", "# labels: {...}" when the
 * sample has labels, "#\tADDR\tfunction+0xOFF[\tFILE:LINE]" per frame (a
 * location's inlined frames each on a line of their own), a blank line.
 * The count is the first sample value. 0 or -1.
 */
int text_write_count(const struct profile *p, const char *name, struct buf *out);

/*
 * Go's legacy heap text form: "heap profile: INUSE_OBJ: INUSE_BYTES
 * [ALLOC_OBJ: ALLOC_BYTES] @ heap/2*RATE", then one record per sample,
 * largest in-use bytes first, "I: IB [A: AB] @ ADDR..." and its "#" frame
 * lines. The profile's values must be alloc_objects, alloc_space,
 * inuse_objects, inuse_space — raw sample counts, which pprof scales
 * itself when it reads this form. 0 or -1.
 */
int text_write_heap(const struct profile *p, int64_t rate, struct buf *out);

/*
 * Go's legacy contention text form (block and mutex profiles): "--- NAME:"
 * (mutex, or contention for block), "cycles/second=1000000000", then one
 * record per sample, largest delay first, "DELAY COUNT @ ADDR..." and its
 * "#" frame lines. The profile's values must be contentions and delay in
 * nanoseconds, already scaled (no sampling period is written, so pprof
 * does not scale them again). 0 or -1.
 */
int text_write_contention(const struct profile *p, const char *name, struct buf *out);

/*
 * A thread dump: title, then one block per sample ordered by the "tid"
 * label: 'thread TID "NAME" STATE[ in SYSCALL]' and its frames
 * "#N  0xADDR function+0xOFF[ (inlined)][ at FILE:LINE] (object)", FILE's
 * last component, an inlined frame at its caller's address and marked;
 * an address without a name says "[no symbol]" (in an object) or
 * "[anonymous code]" (JIT code without a perf map). 0 or -1.
 */
int text_write_dump(const struct profile *p, const char *title, struct buf *out);

#endif
