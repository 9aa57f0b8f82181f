/*
 * outfile.c — atomic output files. The temporary file sits in the
 * destination's directory so that rename(2) replaces the final path in one
 * step on the same filesystem; it is created with open(O_CREAT|O_EXCL, 0666)
 * under a random name rather than mkstemp(), because mkstemp's mode 0600
 * would have to be widened with fchmod() after reading the umask, and
 * umask() can only be read by changing it, which races with other threads.
 * Here the kernel applies the umask (and any default ACL) itself. Nothing
 * is synced: a reader, or cprof-attach killed at any instruction, sees the
 * old file or the whole new one. A wait for the device (fdatasync) has no
 * bound, no signal ends it, and a target can make it long (by keeping the
 * kernel's writeback workers from a CPU: doc/limits.md); so after a
 * machine crash the newest file may be missing or empty, as perf's and
 * pprof's own output files may.
 * An existing file that is not regular is looked at through an O_PATH
 * descriptor first and written through the same descriptor (reopened by
 * /proc/self/fd), so a FIFO or a link another user slips in between the
 * look and the open is never the one written.
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
#include "common/watchdog.h"
#include "writer/outfile.h"

#define OUTFILE_TRIES 100 /* name collisions tolerated before giving up */

/* Free what o holds and forget the file: the state after commit or abort. */
static void outfile_release(struct outfile *o)
{
	free(o->path);
	free(o->name);
	free(o->tmp);
	if (o->dfd >= 0)
		close(o->dfd);
	o->path = NULL;
	o->name = NULL;
	o->tmp = NULL;
	o->dfd = -1;
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

/* Create a fresh temporary name beside o->name in o->dfd: link (unnamed) or create it. */
static int outfile_make_tmp(struct outfile *o)
{
	char suffix[7], proc[64];
	int n;

	for (unsigned attempt = 0; attempt < OUTFILE_TRIES; attempt++) {
		outfile_suffix(suffix, attempt);
		n = snprintf(o->tmp, NAME_MAX + 1, ".%s.%s.tmp", o->name, suffix);
		if (n < 0 || n > NAME_MAX) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if (o->unnamed) {
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
			if (linkat(AT_FDCWD, proc, o->dfd, o->tmp, AT_SYMLINK_FOLLOW) == 0)
				return 0;
		} else {
			o->fd = openat(o->dfd, o->tmp,
				       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
			if (o->fd >= 0)
				return 0;
		}
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

/* Root's and ours: owners whose files and links we take at their word. */
static int trusted_owner(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* A directory someone else may put files in: group- or other-writable, or another user's. */
static int dir_shared(const struct stat *d)
{
	return (d->st_mode & (S_IWGRP | S_IWOTH)) || !trusted_owner(d->st_uid);
}

static const char *kind_of(mode_t m)
{
	return S_ISLNK(m) ? "symbolic link" : S_ISFIFO(m) ? "FIFO" : S_ISSOCK(m) ? "socket"
		: S_ISCHR(m) || S_ISBLK(m) ? "device" : "file";
}

/*
 * Open o->name for writing directly when it exists and is not a regular
 * file (the header's rule). 0 when opened, 1 when it is absent or a
 * regular file (or a link to one: the rename replaces it), -1 refused or
 * failed (message printed, errno set).
 */
static int outfile_direct(struct outfile *o, const struct stat *dir)
{
	char proc[64];
	struct stat st;
	int pfd = -1, follow;

	for (follow = 0; follow < 2; follow++) {
		pfd = openat(o->dfd, o->name, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
		if (pfd < 0 && errno == ENOENT)
			return 1; /* absent, or a dangling link that the rename replaces */
		if (pfd < 0 || fstat(pfd, &st) < 0)
			goto fail;
		if (S_ISREG(st.st_mode)) {
			close(pfd);
			return 1;
		}
		if (S_ISDIR(st.st_mode)) {
			close(pfd);
			errno = EISDIR;
			return error_errno("cannot write \"%s\"", o->path);
		}
		if (dir_shared(dir) && !trusted_owner(st.st_uid)) {
			close(pfd);
			errno = EPERM;
			return error("cannot write \"%s\": it is a %s of another user (uid %u) in a "
				     "directory others may write to; remove it or choose another path",
				     o->path, kind_of(st.st_mode), (unsigned)st.st_uid);
		}
		if (!S_ISLNK(st.st_mode))
			break;
		close(pfd); /* a link of ours (or in a directory of ours): look at its target */
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	o->fd = open(proc, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (o->fd < 0)
		goto fail;
	close(pfd);
	return 0;
fail:
	if (pfd >= 0)
		close(pfd);
	return error_errno("cannot write \"%s\"", o->path);
}

int outfile_openat(struct outfile *o, int dirfd, const char *name, const char *shown)
{
	struct stat dir;
	int r;

	o->path = o->name = o->tmp = NULL;
	o->fd = o->dfd = -1;
	o->unnamed = 0;
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") ||
	    strlen(name) > NAME_MAX - 12) {
		errno = strlen(name) > NAME_MAX - 12 ? ENAMETOOLONG : EISDIR;
		return error_errno("cannot write \"%s\"", shown);
	}
	o->path = strdup(shown);
	o->name = strdup(name);
	o->tmp = malloc(NAME_MAX + 1);
	if (!o->path || !o->name || !o->tmp)
		goto err;
	o->dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (o->dfd < 0 || fstat(o->dfd, &dir) < 0)
		goto err;
	r = outfile_direct(o, &dir);
	if (r < 0) {
		outfile_release(o);
		return -1;
	}
	if (r == 0) {
		free(o->name);
		free(o->tmp);
		o->name = o->tmp = NULL;
		return 0;
	}
	o->fd = openat(o->dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
	if (o->fd >= 0) {
		o->unnamed = 1;
		return 0;
	}
	/* No O_TMPFILE here (EOPNOTSUPP, EISDIR): a named temporary file. */
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		goto err;
	if (outfile_make_tmp(o) < 0)
		goto err;
	return 0;
err:
	error_errno("cannot write \"%s\"", shown);
	outfile_release(o);
	return -1;
}

/*
 * Open directory dir (O_PATH) one component at a time, following a
 * symbolic link only when it is root's or ours or sits in a directory no
 * one else may write to (the header's rule, for the directories on the
 * way: /tmp/x/out with /tmp/x another user's link to /etc is refused).
 * The descriptor, or -1 (message printed, naming path).
 */
static int open_dir_walk(const char *dir, const char *path)
{
	char buf[PATH_MAX], *comp, *save = NULL;
	struct stat st, pst;
	int fd, nfd = -1;

	if (strlen(dir) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return error_errno("cannot write \"%s\"", path);
	}
	memcpy(buf, dir, strlen(dir) + 1);
	fd = open(dir[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return error_errno("cannot write \"%s\"", path);
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		nfd = openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 || fstat(nfd, &st) < 0 || fstat(fd, &pst) < 0)
			goto fail;
		if (S_ISLNK(st.st_mode)) {
			close(nfd);
			if (dir_shared(&pst) && !trusted_owner(st.st_uid)) {
				close(fd);
				errno = EPERM;
				return error("cannot write \"%s\": \"%s\" is a symbolic link of another "
					     "user (uid %u) in a directory others may write to",
					     path, comp, (unsigned)st.st_uid);
			}
			nfd = openat(fd, comp, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (nfd < 0)
				goto fail;
		}
		close(fd);
		fd = nfd;
	}
	if (fstat(fd, &st) < 0)
		goto fail;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		goto fail;
	}
	return fd;
fail:
	if (nfd >= 0 && nfd != fd)
		close(nfd);
	close(fd);
	return error_errno("cannot write \"%s\"", path);
}

int outfile_open(struct outfile *o, const char *path)
{
	char dir[PATH_MAX];
	const char *slash, *base;
	int dfd, r;

	o->path = o->name = o->tmp = NULL;
	o->fd = o->dfd = -1;
	o->unnamed = 0;
	if (strcmp(path, "-") == 0) {
		o->fd = STDOUT_FILENO;
		return 0;
	}
	slash = strrchr(path, '/');
	base = slash ? slash + 1 : path;
	if (!*base || strlen(path) >= PATH_MAX) {
		errno = !*base ? EISDIR : ENAMETOOLONG;
		return error_errno("cannot write \"%s\"", path);
	}
	if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), ".");
	dfd = open_dir_walk(dir, path);
	if (dfd < 0)
		return -1;
	r = outfile_openat(o, dfd, base, path);
	close(dfd);
	return r;
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
		watchdog_progress(); /* a reader that takes it is not a stuck write */
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
	if (o->unnamed) {
		o->fd = fd; /* linkat names it through its descriptor */
		if (outfile_make_tmp(o) < 0) {
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
	if (renameat(o->dfd, o->tmp, o->dfd, o->name) < 0) {
		error_errno("cannot rename \"%s\" to \"%s\"", o->tmp, o->path);
		goto err;
	}
	outfile_release(o);
	return 0;
err:
	unlinkat(o->dfd, o->tmp, 0);
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
			unlinkat(o->dfd, o->tmp, 0); /* an unnamed file vanishes with its descriptor */
	}
	outfile_release(o);
}
