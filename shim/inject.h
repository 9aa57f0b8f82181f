#ifndef CPROF_SHIM_INJECT_H
#define CPROF_SHIM_INJECT_H
/*
 * inject — the shim loaded into a running process by dlopen (cprof-attach
 * --inject, doc/inject.md) instead of LD_PRELOAD: cprof_inject_arm points
 * the GOT slots of the hooked functions at the shim, cprof_inject_disarm
 * puts them back. The exported API and its semantics are the contract in
 * doc/inject.md (and /work/notes/inject-contract.md while it is built).
 *
 * Invariants:
 *  - shim_late is 1 when libcprof.so was loaded after libc (dlopen'd),
 *    fixed by the constructor; only then may it be armed. A preloaded
 *    shim never arms and inject_armed stays 0;
 *  - in injected mode every "next" function (shim_next, lock_next, the
 *    real dlopen) is resolved with dlsym(RTLD_DEFAULT) at the first arm,
 *    before any slot is patched: the bootstrap arena never serves the
 *    program, and sampled blocks come from the real allocator (NEXT_FOREIGN:
 *    its memalign, into the block table), never from the shim's pool, so
 *    that after a disarm the program's own free takes every block;
 *  - inject_armed is 1 exactly while slots may point at the shim (set
 *    before the patch, cleared after the restore); arm, disarm and the
 *    dlopen hook's patch are serialised by one try-lock (a caller that
 *    finds it taken returns -EBUSY or, the self-eject, does nothing);
 *  - an arm after a disarm zeroes the buckets' counters and empties the
 *    block table before patching (a fresh window; segment.h);
 *  - armed, the next sampled slow path (allocation or lock) disarms when
 *    the reader's beat (or the arm, if none came since) is older than
 *    SEG_INJECT_QUIET_NS: inject_state EJECTED. A fork child keeps the
 *    patched slots (its memory is a copy), gets its own segment (init.c)
 *    and its own quiet period from the fork.
 */
#include <stdint.h>

#include "shim/shim.h"

#define CPROF_INJECT_HEAP 1u
#define CPROF_INJECT_LOCKS 2u

extern int shim_late SHIM_HIDDEN;
extern int inject_armed SHIM_HIDDEN;

/* 1 if libcprof.so comes after libc in the link map (loaded by dlopen). */
int inject_loaded_late(void) SHIM_HIDDEN;

/* The self-eject check, from a sampled slow path (cheap when not armed). */
void inject_check_slow(void) SHIM_HIDDEN;
static inline void inject_check(void)
{
	if (__builtin_expect(__atomic_load_n(&inject_armed, __ATOMIC_RELAXED), 0))
		inject_check_slow();
}

/* In a fork child (from init.c's handler): a fresh lock and quiet period. */
void inject_fork_child(void) SHIM_HIDDEN;

#endif
