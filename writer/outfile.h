#ifndef CPROF_OUTFILE_H
#define CPROF_OUTFILE_H
/*
 * outfile — an output file that appears atomically.
 *
 * Invariants:
 *  - the final path never holds a partial file: bytes go to an unnamed
 *    file (O_TMPFILE) in the same directory, which outfile_commit() flushes,
 *    links as ".NAME.XXXXXX.tmp" and renames over the final path; a process
 *    killed before the commit leaves nothing behind. Where the filesystem
 *    lacks O_TMPFILE the temporary file is named from the start (O_EXCL,
 *    O_NOFOLLOW, a random name);
 *  - every name is used relative to the directory's descriptor, opened once
 *    by outfile_open(): the directory cannot be swapped under us between
 *    the checks and the writes;
 *  - the temporary file is created by outfile_open(), so an unwritable
 *    destination is found before any work is done;
 *  - "-" means standard output, written directly (no temporary file); so
 *    is an existing path that is not a regular file (/dev/null, a FIFO),
 *    which a rename would replace. Such a file is opened as an O_PATH
 *    descriptor (which never blocks, follows no link), checked with
 *    fstat() and only then opened for writing through that descriptor, so
 *    what is checked is what is written;
 *  - in a directory another user could write to (group- or other-writable,
 *    like /tmp, or owned by someone but root and us), cprof never writes
 *    into a FIFO, device or socket, nor follows a symbolic link, that a
 *    user other than root or us owns: they are refused with one message,
 *    as the kernel's protected_fifos and protected_symlinks would (a
 *    link is refused whatever it points to). The same holds for every
 *    directory on the way: the path is walked one component at a time
 *    and another user's link in such a directory is not followed. A
 *    regular file there is replaced by the rename, never written into,
 *    whoever owns it;
 *  - the file is created with mode 0666 filtered by the caller's umask;
 *  - after outfile_commit() or outfile_abort() the struct holds nothing.
 */
#include <stddef.h>

struct outfile {
	char *path;   /* final path as given (for messages), or NULL for stdout */
	char *name;   /* its last component, renamed over in dfd; NULL when written directly */
	char *tmp;    /* temporary name in dfd, or NULL */
	int dfd;      /* the destination's directory, or -1 */
	int fd;
	int unnamed;  /* fd is an O_TMPFILE file, linked only at commit */
};

/* Create the temporary file for path ("-": stdout). 0 or -1 (message printed). */
int outfile_open(struct outfile *o, const char *path);

/*
 * Like outfile_open() for the file name (one component, no '/') in the
 * directory dirfd (duplicated: the caller keeps its own); shown names it
 * in messages. 0 or -1 (message printed).
 */
int outfile_openat(struct outfile *o, int dirfd, const char *name, const char *shown);

/* Write all of data; 0 or -1 (message printed). */
int outfile_write(struct outfile *o, const void *data, size_t n);

/* Flush and rename into place; 0 or -1 (message printed, temporary removed). */
int outfile_commit(struct outfile *o);

/* Remove the temporary file and forget everything. */
void outfile_abort(struct outfile *o);

#endif
