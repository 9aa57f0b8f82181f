#ifndef CPROF_CALLSITE_H
#define CPROF_CALLSITE_H
/*
 * callsite — is a return address really one? x86_64 code bytes just before
 * an address are decoded to see whether they end in a call instruction,
 * and for a direct call, where it goes. The frame-pointer recovery of
 * sleeping threads (unwinder.c) uses it to tell a live frame record from
 * stale words on the stack.
 *
 * Invariants:
 *  - code is read through struct space (the objects' files), never from
 *    the live target; an address outside every object is not a call site;
 *  - decoding backwards is ambiguous, so the answer is "the bytes before
 *    ret can be read as a call ending at ret", checked for the direct form
 *    (e8 rel32, only when its target is inside an object) and the
 *    indirect forms compilers emit (ff /2 with every ModRM/SIB/
 *    displacement length, with or without a REX prefix);
 *  - pure: no state, no allocation.
 */
#include <stdint.h>

struct space;

#define CALLSITE_NONE 0     /* not preceded by a call */
#define CALLSITE_DIRECT 1   /* call rel32; *target is where it goes */
#define CALLSITE_INDIRECT 2 /* call through a register or memory */

/* Classify the instruction ending at ret. */
int callsite_classify(struct space *s, uint64_t ret, uint64_t *target);

/*
 * Whether code at addr is a PLT-style stub, an indirect jump through
 * memory (optionally after endbr64 and a bnd prefix): a direct call to such
 * a stub may reach any function.
 */
int callsite_is_stub(struct space *s, uint64_t addr);

#endif
