#ifndef CPROF_SPOOL_H
#define CPROF_SPOOL_H
/*
 * spool — profiles waiting to be pushed, kept in a directory as ordinary
 * pprof files (STEM.pb.gz, readable with go tool pprof) each with a small
 * metadata file (STEM.meta, parse.h). STEM starts with the capture's start
 * time in nanoseconds, zero-padded, so the names sort oldest first; the
 * rest names the run and the capture number.
 *
 * Invariants:
 *  - an entry exists when its STEM.pb.gz exists; the metadata is written
 *    before it and both appear atomically (writer/outfile: temporary file,
 *    rename), so a crash leaves no partial file under a final name;
 *  - the directory's entries take at most the cap given to spool_open():
 *    adding one first drops the oldest entries until it fits, and an entry
 *    bigger than the cap is not kept at all; every drop is reported to the
 *    caller, so it can be counted;
 *  - an entry is sent by one process at a time: whoever sends or drops it
 *    holds flock(LOCK_EX) on its STEM.pb.gz, and removes the files while
 *    holding it; several cprof-attach sharing one spool (one per service
 *    on a host) neither send an entry twice nor drop one being sent;
 *  - while a run of cprof-attach lives, it alone sends its entries (others
 *    would take its profiles' outcomes from it): it holds flock() on
 *    .run-RUN.lock, which appears already locked (created under a
 *    temporary name, locked, renamed); a run whose lock is absent or
 *    unlocked is over, and its entries are anyone's;
 *  - nothing read back (names, metadata, data) is trusted: metadata goes
 *    through spool_meta_parse(), sizes are capped, files are opened
 *    without following a link or blocking on a FIFO;
 *  - the directory is checked once by spool_open() (common/privdir.h:
 *    ours, not a link, writable by no one else) and every entry is then
 *    named relative to that descriptor, never by a path again: what was
 *    checked is what is used, whatever is moved or planted at the path.
 */
#include <stddef.h>
#include <stdint.h>

#include "attach/push/parse.h"
#include "common/buf.h"

#define SPOOL_STEM_MAX 96u
#define SPOOL_DATA_MAX (256u << 20) /* a profile file read back at most */
#define SPOOL_LIST_MAX 100000u      /* entries looked at in one listing */

struct spool;

/* One entry taken for sending: its data and metadata, and the lock. */
struct spool_item {
	char stem[SPOOL_STEM_MAX];
	struct spool_meta meta;
	struct buf data;
	int fd; /* the locked STEM.pb.gz */
};

/* Called for each entry that adding another one dropped. */
typedef void spool_drop_fn(void *ctx, const char *stem);

/*
 * Open (creating it and its parents, mode 0700) the spool directory dir
 * with a cap of cap bytes. 0, or -1 with a message naming the directory.
 */
int spool_open(struct spool **sp, const char *dir, uint64_t cap);

/* Forget sp (the directory and its entries stay); drop the run's lock. */
void spool_release(struct spool *sp);

/* Hold run's lock for the life of sp. 0, or -1 with a message. */
int spool_lock_run(struct spool *sp, const char *run);

/* Is run another process's live run (its entries are not to be taken)? */
int spool_run_alive(const struct spool *sp, const char *run);

/* Does the entry stem exist? */
int spool_has(const struct spool *sp, const char *stem);

/* The directory. */
const char *spool_dir(const struct spool *sp);

/*
 * Add an entry named stem holding len bytes of data, described by m,
 * dropping the oldest entries not being sent until it fits (drop() is
 * called for each, and for stem itself when it cannot fit at all).
 * 0 when it is kept, 1 when it was dropped, -1 when it could not be
 * written (message printed).
 */
int spool_add(struct spool *sp, const char *stem, const struct spool_meta *m, const void *data,
	      size_t len, spool_drop_fn *drop, void *ctx);

/*
 * The stems of the entries, oldest first, into *stems (an array of
 * SPOOL_STEM_MAX-byte names the caller frees). Returns how many, or -1.
 */
long spool_list(struct spool *sp, char (**stems)[SPOOL_STEM_MAX]);

/*
 * Take the entry stem for sending: lock it, read its data and metadata.
 * 0 when taken (release it with spool_done()), 1 when it is gone or
 * another process holds it, 2 when it is unreadable (bad metadata, too
 * big: it stays, for the cap to drop eventually, and is skipped).
 */
int spool_take(struct spool *sp, const char *stem, struct spool_item *it);

/* Release a taken entry; with remove, delete its files first (it was sent, or refused for good). */
void spool_done(struct spool *sp, struct spool_item *it, int remove);

#endif
