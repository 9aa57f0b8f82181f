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
 *    lacks O_TMPFILE the temporary file is named from the start;
 *  - the temporary file is created by outfile_open(), so an unwritable
 *    destination is found before any work is done;
 *  - "-" means standard output, written directly (no temporary file); so
 *    is an existing path that is not a regular file (/dev/null, a FIFO),
 *    which a rename would replace;
 *  - the file is created with mode 0666 filtered by the caller's umask;
 *  - after outfile_commit() or outfile_abort() the struct holds nothing.
 */
#include <stddef.h>

struct outfile {
	char *path;   /* final path, or NULL for stdout */
	char *tmp;    /* temporary path, or NULL */
	int fd;
	int unnamed;  /* fd is an O_TMPFILE file, linked only at commit */
};

/* Create the temporary file for path ("-": stdout). 0 or -1 (message printed). */
int outfile_open(struct outfile *o, const char *path);

/* Write all of data; 0 or -1 (message printed). */
int outfile_write(struct outfile *o, const void *data, size_t n);

/* Flush and rename into place; 0 or -1 (message printed, temporary removed). */
int outfile_commit(struct outfile *o);

/* Remove the temporary file and forget everything. */
void outfile_abort(struct outfile *o);

#endif
