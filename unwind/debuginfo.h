#ifndef CPROF_DEBUGINFO_H
#define CPROF_DEBUGINFO_H
/*
 * debuginfo — the source lines of every object a run meets, found once
 * per object and kept for the whole run (every capture of an --every
 * series): the lookup order of a debugger, ending at a debuginfod server.
 *
 *   1. the object's own .debug_info (built with -g, not stripped);
 *   2. a separate debug file by build ID, then by .gnu_debuglink
 *      (unwind/debugfind.h: the target's root first, then the host's);
 *   3. when DEBUGINFOD_URLS is set, a debuginfod server through
 *      elfutils' libdebuginfod and its cache (DEBUGINFOD_CACHE_PATH).
 *
 * Invariants:
 *  - an object is looked up once per run: by its GNU build ID with its
 *    (device, inode) (a build ID is the object's claim: another
 *    process's object may copy it), else by (device, inode, path); a miss is remembered too, so a stripped
 *    library with no debug file anywhere costs one search, not one per
 *    capture;
 *  - a debuginfod query never hangs a capture: each waits at most
 *    DEBUGINFO_NET_WAIT_S seconds (DEBUGINFOD_TIMEOUT when smaller),
 *    and the first query that fails for any reason but "not there" turns
 *    debuginfod off for the rest of the run with one note naming the
 *    server and the cause;
 *  - a file the server sends is used only when its own build ID is the
 *    one asked for (one note otherwise), as a local one by build ID;
 *  - at most DEBUGINFO_MAX_OBJECTS objects are kept; past it lookups give
 *    no lines (and never evict one in use);
 *  - not thread-safe: the thread that writes profiles uses it.
 */
#include <stdint.h>
#include <sys/types.h>

#include "unwind/debugfind.h"

#define DEBUGINFO_NET_WAIT_S 5
#define DEBUGINFO_MAX_OBJECTS 4096

struct dwlines;
struct elf_image;

/* One object as the target maps it. */
struct debuginfo_req {
	pid_t pid;
	const char *path;             /* as /proc/PID/maps names it */
	const char *build_id;         /* hex, "" unknown */
	uint64_t dev, inode;
	const struct elf_image *img;  /* the object's file, for its sections */
	int (*open_self)(void *ctx);  /* a new read-only fd of the object's file, or -1 */
	void *ctx;
};

struct debuginfo;

/*
 * A cache for one run; NULL when out of memory. debuginfo_new() and
 * debuginfo_free() are a deliberate pair.
 */
struct debuginfo *debuginfo_new(void);

/* Free the cache and every debug file it holds open; NULL is fine. */
void debuginfo_free(struct debuginfo *d);

/*
 * The lines of q's object (valid until debuginfo_free()), with *how set to
 * where they came from; NULL (DEBUG_NONE) when nothing has them.
 */
struct dwlines *debuginfo_lines(struct debuginfo *d, const struct debuginfo_req *q,
				enum debug_how *how);

#endif
