#ifndef CPROF_STOPCOPY_H
#define CPROF_STOPCOPY_H
/*
 * stopcopy — the one place that stops a thread: seize, interrupt, copy
 * registers and stack, detach; and the reading of sleeping threads without
 * a stop. Private to the session (session.h documents the invariants).
 */
#include "attach/engine/session.h"

/*
 * Handle a wait status of a seized thread t: when it is stopped and snap is
 * not NULL, copy it into snap; release it either way (detach, passing on a
 * signal it stopped for). Returns 1 when copied, 0 when released without a
 * copy, -1 when the thread is gone.
 */
int stopcopy_reap(struct session *s, struct thread *t, int status, struct snapshot *snap);

/*
 * The stop of a thread whose batch moved on came (status from waitpid):
 * copy it and give it to s->defer_emit when it was deferred, else just
 * release it.
 */
void stopcopy_late(struct session *s, struct thread *t, int status);

#endif
