#ifndef CPROF_LINECACHE_H
#define CPROF_LINECACHE_H
/*
 * linecache — source lines resolved in earlier runs, kept per user in
 * $XDG_CACHE_HOME/cprof/lines/ (else ~/.cache/cprof/lines/), one file per
 * object: its GNU build ID and its identity as the kernel maps it
 * (BUILDID-DEV-INODE.lines, unwind/linetab.h's format), so that the
 * scripts and fleets that snapshot the same binaries again and again pay
 * libdw once per binary and address, not once per run. An address found
 * here is never looked up in DWARF; a module whose every address is here
 * has its debug file left unopened.
 *
 * Whose word is kept: a build ID is the object's own claim, and any
 * process may ship an object with libc's build ID and DWARF that lies.
 * What is kept must hold for every later process that maps the object,
 * so:
 *  - lines are kept only when the file they were read from (the object,
 *    or its debug file) is a regular file owned by root or by us that no
 *    one else may write, and carries the object's build ID
 *    (linecache_trusted()): a file the target's user owns or could have
 *    written is its word, used for its own profile and never kept;
 *  - the key names the object's device and inode (from /proc/PID/maps,
 *    which the kernel writes), so a table is read back only for the very
 *    file whose lines were kept, never for another object claiming its
 *    build ID (a container image's root-owned copy, say).
 *
 * Invariants:
 *  - the directory is used only when privdir_open() accepts it (ours, not
 *    a symlink, not group- or other-writable); otherwise one warning and
 *    the run goes on without the cache;
 *  - its files are untrusted: each goes through linetab_merge() and is
 *    ignored when it fails (and replaced by the next write); only regular
 *    files of ours, opened without following a symlink, at most
 *    LINETAB_MAX_BYTES, are read;
 *  - a file appears whole or not at all: written to a temporary file in
 *    the same directory, renamed over the old one. Not synced (a wait
 *    for the device has no bound, writer/outfile.c): after a machine
 *    crash a file may be empty, and is then ignored as above. Writers
 *    serialise on flock() of the directory (waiting at most
 *    LINECACHE_LOCK_WAIT_MS, then writing anyway: the rename alone keeps
 *    every file valid) and merge what is on disk before writing, so two
 *    runs racing both leave a valid file holding at least one's entries;
 *  - the directory holds at most LINECACHE_DIR_FILES files and
 *    LINECACHE_DIR_BYTES bytes: each write trims the least recently used
 *    (by mtime; a file read from is touched once per run) past either;
 *  - an object without a build ID is not cached;
 *  - a file written with another LINETAB_VERSION (the keys of version 1
 *    named the build ID alone) is never read, and trimmed in time;
 *  - not thread-safe: the thread that writes profiles uses it.
 */
#include <stddef.h>
#include <stdint.h>

#define LINECACHE_DIR_FILES 2048
#define LINECACHE_DIR_BYTES (128ull << 20)
#define LINECACHE_MAX_TABLES 4096 /* build IDs one run keeps */
#define LINECACHE_LOCK_WAIT_MS 200

struct dwlines;
struct linecache;
struct linetab;

/*
 * The cache in directory dir (NULL: the default above). Nothing is read
 * or created yet. NULL when there is no default (neither XDG_CACHE_HOME
 * nor HOME is absolute) or memory runs out. A pair with linecache_free().
 */
struct linecache *linecache_new(const char *dir);

/* Free the tables (nothing is written: linecache_flush() first); NULL is fine. */
void linecache_free(struct linecache *c);

/*
 * The table of the object with build_id at (dev, inode) for this run,
 * read from its file on the first ask; new entries put in it are written
 * by linecache_flush(). NULL when build_id is not a usable key (none),
 * the cache is off or full. Put only what linecache_trusted() allows.
 */
struct linetab *linecache_table(struct linecache *c, const char *build_id, uint64_t dev,
				uint64_t inode);

/*
 * Whether what l answers for an object with build_id may be kept (the
 * rule above): l read a regular file owned by root or by our effective
 * user, writable by neither group nor others, whose build ID is
 * build_id. Costs no system call (l's fstat() was taken at its open).
 */
int linecache_trusted(const struct dwlines *l, const char *build_id);

/*
 * Merge every table that gained entries into its file, then trim the
 * directory. 0, or -1 when something could not be written (a warning,
 * once per run).
 */
int linecache_flush(struct linecache *c);

#endif
