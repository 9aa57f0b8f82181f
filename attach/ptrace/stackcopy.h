#ifndef CPROF_STACKCOPY_H
#define CPROF_STACKCOPY_H
/*
 * stackcopy — copying a still thread's registers and stack bytes into a
 * snapshot. Private to the engine: stopcopy.c calls it for a stopped
 * thread and for one read asleep.
 *
 * Invariants:
 *  - the thread does not run while it is copied (the caller's business);
 *  - the copy never exceeds s->stack_cap bytes in all, however many
 *    regions (its own stack, and an interrupted one under a handler on an
 *    alternate signal stack) it holds;
 *  - a hole in the target's memory ends a region's copy cleanly, short.
 */
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "attach/ptrace/session.h"

/* Registers from PTRACE_GETREGS into the unwinder's DWARF numbering, all valid. */
void stackcopy_regs(struct regs *r, const struct user_regs_struct *u);

/*
 * Copy thread tid's stack (sp and pc from its registers) into snap->img:
 * region 0 from sp up, as far as its hint says; when sp is on an
 * alternate signal stack, region 1 from the interrupted sp (see
 * stackcopy.c). Learns and updates tid's hints.
 */
void stackcopy_image(struct session *s, pid_t tid, uint64_t sp, uint64_t pc,
		     struct snapshot *snap);

#endif
