#ifndef CPROF_FILEFAULT_H
#define CPROF_FILEFAULT_H
/*
 * filefault — private mappings of files that a target controls, made safe
 * against the file shrinking under them. A file truncated while mapped
 * makes a read past its new end raise SIGBUS; the target can do that to
 * any file of its own that cprof reads. Mappings made here are kept in a
 * registry that a SIGBUS handler reads: a fault inside one of them gets an
 * anonymous zero page mapped over the faulting page, the read goes on and
 * sees zeros, and the mapping counts a hit (it is then "damaged": what was
 * read from it may be wrong, and its owner stops trusting it).
 *
 * Invariants:
 *  - the handler is installed once, on the first filefault_map(); it is
 *    async-signal-safe (atomic loads and mmap only) and chains to the
 *    handler it replaced for every fault that is not in a registered
 *    mapping (or restores the default action, so such a fault still kills);
 *  - at most FILEFAULT_MAX mappings are registered at once; past that
 *    filefault_map() fails (ENFILE) rather than map without protection;
 *  - a mapping must not be read while filefault_unmap() ends it (the same
 *    rule as for munmap);
 *  - replacement pages are anonymous memory: a damaged mapping grows by at
 *    most its own size, never beyond.
 */
#include <stdatomic.h>
#include <stddef.h>

#define FILEFAULT_MAX 8192 /* mappings registered at once: objects of a run and their debug files */

/* A registered private mapping of a file. */
struct filefault_map {
	void *data;
	size_t size;
	int slot;                   /* in the registry, -1 when none */
	const _Atomic unsigned *hits; /* the slot's count of replaced pages, NULL when none */
};

/* Whether a page of m was replaced by zeros: a load, for hot paths. */
static inline int filefault_damaged(const struct filefault_map *m)
{
	return m->hits && atomic_load_explicit(m->hits, memory_order_relaxed) != 0;
}

/*
 * Map size bytes of the file open on fd from offset 0, MAP_PRIVATE, with
 * prot (PROT_READ, or PROT_READ | PROT_WRITE for a copy-on-write view),
 * and register it. 0, or -1 with errno set.
 */
int filefault_map(int fd, size_t size, int prot, struct filefault_map *m);

/* Unregister and unmap (a map that failed or was never made is fine). */
void filefault_unmap(struct filefault_map *m);

/* Pages of m replaced by zeros since it was made; nonzero: it is damaged. */
unsigned filefault_hits(const struct filefault_map *m);

/* Pages replaced in every mapping of the process so far. */
unsigned long filefault_total(void);

/*
 * Copy a name for a message into out[0..cap): the path of the file open
 * on fd, control characters replaced by '?', cut to fit. "" when unknown.
 */
void filefault_fd_name(int fd, char *out, size_t cap);

#endif
