/*
 * outfile.c — atomic output files. The temporary file sits in the
 * destination's directory so that rename(2) replaces the final path in one
 * step on the same filesystem; it is created with open(O_CREAT|O_EXCL, 0666)
 * under a random name rather than mkstemp(), because mkstemp's mode 0600
 * would have to be widened with fchmod() after reading the umask, and
 * umask() can only be read by changing it, which races with other threads.
 * Here the kernel applies the umask (and any default ACL) itself. The data
 * is flushed with fdatasync() before the rename so that a crash leaves
 * either the old file or the whole new one; the directory is not synced, so
 * after a crash the rename itself may be lost, never half applied.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "writer/outfile.h"

#define OUTFILE_TRIES 100 /* name collisions tolerated before giving up */

/* Free what o holds and forget the file: the state after commit or abort. */
static void outfile_release(struct outfile *o)
{
	free(o->path);
	free(o->tmp);
	o->path = NULL;
	o->tmp = NULL;
	o->fd = -1;
	o->unnamed = 0;
}

/* Six random name characters; getrandom() may be missing or interrupted,
 * then the clock and a counter are random enough for O_EXCL to settle. */
static void outfile_suffix(char out[7], unsigned attempt)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char r[6];
	struct timespec ts;

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		uint64_t x;

		clock_gettime(CLOCK_REALTIME, &ts);
		x = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20) ^ ((uint64_t)attempt << 40);
		for (size_t i = 0; i < sizeof(r); i++, x >>= 7)
			r[i] = (unsigned char)(x ^ (x >> 31));
	}
	for (size_t i = 0; i < sizeof(r); i++)
		out[i] = set[r[i] % (sizeof(set) - 1)];
	out[6] = 0;
}

/* Create a fresh temporary name beside path: link (unnamed) or create it. */
static int outfile_make_tmp(struct outfile *o, int dirlen, const char *base)
{
	char suffix[7], proc[64];
	int n;

	for (unsigned attempt = 0; attempt < OUTFILE_TRIES; attempt++) {
		outfile_suffix(suffix, attempt);
		n = snprintf(o->tmp, PATH_MAX, "%.*s.%s.%s.tmp", dirlen, o->path, base, suffix);
		if (n < 0 || n >= PATH_MAX) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if (o->unnamed) {
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
			if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0)
				return 0;
		} else {
			o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
			if (o->fd >= 0)
				return 0;
		}
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

int outfile_open(struct outfile *o, const char *path)
{
	const char *slash, *base;
	struct stat st;
	int dirlen, n;

	o->path = NULL;
	o->tmp = NULL;
	o->fd = -1;
	o->unnamed = 0;
	if (strcmp(path, "-") == 0) {
		o->fd = STDOUT_FILENO;
		return 0;
	}
	slash = strrchr(path, '/');
	base = slash ? slash + 1 : path;
	dirlen = slash ? (int)(slash - path + 1) : 0;
	if (!*base || strlen(path) >= PATH_MAX) {
		errno = !*base ? EISDIR : ENAMETOOLONG;
		return error_errno("cannot write \"%s\"", path);
	}
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		return error_errno("cannot write \"%s\"", path);
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* A device, FIFO or socket (/dev/null, a pipe): write into it;
		 * renaming over it would replace it with a regular file. */
		o->path = strdup(path);
		if (!o->path)
			goto err;
		o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (o->fd < 0)
			goto err;
		return 0;
	}
	o->path = strdup(path);
	o->tmp = malloc(PATH_MAX);
	if (!o->path || !o->tmp)
		goto err;
	if (dirlen) {
		n = snprintf(o->tmp, PATH_MAX, "%.*s", dirlen, path);
		if (n < 0 || n >= PATH_MAX)
			goto err;
	} else {
		snprintf(o->tmp, PATH_MAX, ".");
	}
	o->fd = open(o->tmp, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
	if (o->fd >= 0) {
		o->unnamed = 1;
		return 0;
	}
	/* No O_TMPFILE here (EOPNOTSUPP, EISDIR): a named temporary file. */
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		goto err;
	if (outfile_make_tmp(o, dirlen, base) < 0)
		goto err;
	return 0;
err:
	error_errno("cannot write \"%s\"", path);
	outfile_release(o);
	return -1;
}

int outfile_write(struct outfile *o, const void *data, size_t n)
{
	const unsigned char *p = data;

	if (o->fd < 0) {
		errno = EBADF;
		return error_errno("cannot write \"%s\"", o->path ? o->path : "-");
	}
	while (n) {
		ssize_t r = write(o->fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO;
			if (o->path)
				return error_errno("cannot write \"%s\"", o->path);
			return error_errno("cannot write to standard output");
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int outfile_commit(struct outfile *o)
{
	int fd = o->fd;

	if (!o->tmp) {
		/* Standard output is the caller's to close; nothing to rename. */
		int r = 0;

		if (fd < 0)
			r = -1;
		else if (fd != STDOUT_FILENO && close(fd) < 0)
			r = error_errno("cannot write \"%s\"", o->path);
		outfile_release(o);
		return r;
	}
	o->fd = -1;
	if (fdatasync(fd) < 0) {
		error_errno("cannot write \"%s\"", o->path);
		close(fd);
		goto err;
	}
	if (o->unnamed) {
		const char *slash = strrchr(o->path, '/');

		o->fd = fd; /* linkat names it through its descriptor */
		if (outfile_make_tmp(o, slash ? (int)(slash - o->path + 1) : 0,
				     slash ? slash + 1 : o->path) < 0) {
			error_errno("cannot write \"%s\"", o->path);
			close(fd);
			outfile_release(o);
			return -1;
		}
		o->fd = -1;
	}
	if (close(fd) < 0) {
		error_errno("cannot write \"%s\"", o->path);
		goto err;
	}
	if (rename(o->tmp, o->path) < 0) {
		error_errno("cannot rename \"%s\" to \"%s\"", o->tmp, o->path);
		goto err;
	}
	outfile_release(o);
	return 0;
err:
	unlink(o->tmp);
	outfile_release(o);
	return -1;
}

void outfile_abort(struct outfile *o)
{
	if (!o->tmp && o->fd > STDERR_FILENO)
		close(o->fd); /* a device or FIFO opened directly */
	if (o->tmp) {
		if (o->fd >= 0)
			close(o->fd);
		if (!o->unnamed)
			unlink(o->tmp); /* an unnamed file vanishes with its descriptor */
	}
	outfile_release(o);
}
