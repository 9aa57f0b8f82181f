#ifndef CPROF_SHIM_GOT_H
#define CPROF_SHIM_GOT_H
/*
 * got — rewriting the relocation slots (GOT entries: R_X86_64_JUMP_SLOT,
 * R_X86_64_GLOB_DAT) through which the loaded objects call the hooked
 * functions, and putting them back: how an injected (dlopen'd) shim
 * interposes (doc/inject.md).
 *
 * Invariants:
 *  - every value read from an object's dynamic section, relocations,
 *    symbols and strings is untrusted: each address is checked to lie in
 *    one of the object's PT_LOAD segments before it is read or written,
 *    and every count is capped;
 *  - a slot is written only with one 8-byte aligned atomic store; a page
 *    that is not writable (RELRO) is made writable for that store only
 *    and given back the protection it had (PT_GNU_RELRO: PROT_READ; else
 *    its segment's flags);
 *  - the saved table (mmap'd once, GOT_MAX entries, never grown) holds
 *    each patched slot's address and original value; a slot that already
 *    holds its hook is not patched again (an object loaded since the last
 *    pass is patched by the next one); a full table counts got_full;
 *  - got_restore puts back, newest first, only slots that still lie in a
 *    loaded object and still hold their hook: an object unloaded since
 *    (dlclose) is left alone, and a slot reused by a newer object is
 *    restored from the newer entry;
 *  - no allocation, no stdio; the only lock taken is dl_iterate_phdr's.
 *    Callers serialise got_patch and got_restore.
 */
#include <stddef.h>
#include <stdint.h>

#include "shim/shim.h"

#define GOT_MAX 16384 /* saved slots */

/* One hooked function: its name, and the shim's function to store. */
struct got_hook {
	const char *name;
	void *fn;
};

/*
 * Patches every slot of every loaded object but the one holding self
 * (the shim) and the vDSO whose symbol is one of hooks[0..n). The number
 * of slots patched by this call (>= 0), or -errno (mprotect refused:
 * what this call patched is kept; the caller restores).
 */
int got_patch(const struct got_hook *hooks, size_t n, const void *self) SHIM_HIDDEN;

/* Restores the saved slots (see above) and empties the table: the number restored. */
int got_restore(void) SHIM_HIDDEN;

/* Slots saved now; slots not saved because the table was full (since load). */
size_t got_saved(void) SHIM_HIDDEN;
extern uint64_t got_full SHIM_HIDDEN;

#endif
