#ifndef CPROF_PTRECORD_H
#define CPROF_PTRECORD_H
/*
 * ptrecord — a ptrace snapshot (attach/ptrace/snapshot.h) as samples of
 * the recorder: the step of the ptrace source between the tracer's queue
 * and the profile.
 *
 * Invariants:
 *  - a sample never carries a stack of another state than its own: a
 *    repeat's running part takes the thread's last stack found running,
 *    its sleeping part the last found asleep (recorder keys by tid and
 *    state), else a named marker, never a stackless sample;
 *  - the program's labels are read at the time the policy chose for the
 *    sample's CPU (snapshot.ran_ns), else at the snapshot's own time;
 *  - the snapshot is not freed here.
 */
#include "attach/ptrace/hints.h"
#include "attach/ptrace/snapshot.h"

struct recorder;
struct label_src;

/*
 * Record snap into rec with the labels the request asks for (labels:
 * LABEL_* bits) and the program's from lab (NULL: none); hints learns
 * each thread's stack extent from it.
 */
void ptrecord_snapshot(struct recorder *rec, struct label_src *lab, struct stack_hints *hints,
		       unsigned labels, struct snapshot *snap);

#endif
