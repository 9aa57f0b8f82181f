/*
 * linecache.c — the directory of line tables. A table is read on the
 * first ask for its key (build ID, device, inode) (an openat and a read
 * of a small file) and kept for the run, so that a warm snapshot's whole
 * lines pass is cheap.
 * A flush writes each table that grew: lock the directory, merge the file
 * as it is now (another run may have written it since we read it), write
 * a temporary file, rename, unlock (no sync: see linecache.h). The trim
 * lists the directory only after a write, so a run that learnt nothing
 * new costs no listing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/array.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/privdir.h"
#include "unwind/dwlines.h"
#include "unwind/linecache.h"
#include "unwind/linetab.h"

#define WHAT "line cache directory"
#define EXT ".lines"
#define LIST_MAX 100000u         /* directory entries looked at in one trim */
#define STALE_TMP_S 600          /* a temporary file this old was left by a killed run */

struct table {
	struct linetab *t;
	size_t saved; /* entries its file holds, as far as we know */
	int used;     /* read this run and not yet touched (or written) */
};

struct linecache {
	char dir[PATH_MAX];
	int rfd, wfd; /* the directory checked for reading, for writing; -1 not open */
	int off;      /* refused or failed: no more reads or writes this run */
	int warned;
	struct table *v;
	size_t n, cap;
};

struct linecache *linecache_new(const char *dir)
{
	struct linecache *c;
	char def[PATH_MAX];

	if (!dir && !(dir = privdir_cache("lines", def, sizeof(def))))
		return NULL;
	if (strlen(dir) >= sizeof(c->dir) - LINETAB_MAX_BUILD_ID - 32 || !(c = calloc(1, sizeof(*c))))
		return NULL;
	memcpy(c->dir, dir, strlen(dir) + 1);
	c->rfd = c->wfd = -1;
	return c;
}

void linecache_free(struct linecache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		linetab_free(c->v[i].t);
	free(c->v);
	if (c->rfd >= 0)
		close(c->rfd);
	if (c->wfd >= 0)
		close(c->wfd);
	free(c);
}

static void warn_once(struct linecache *c, const char *why)
{
	if (!c->warned)
		warning("%s; source lines are not cached", why);
	c->warned = 1;
}

/* The directory for reading: -1 when it does not exist (nothing cached yet) or is refused. */
static int dir_read(struct linecache *c)
{
	char why[PATH_MAX + 128];

	if (c->rfd >= 0 || c->off)
		return c->rfd;
	if (c->wfd >= 0)
		return c->wfd;
	c->rfd = privdir_open(c->dir, WHAT, 0, why, sizeof(why));
	if (c->rfd < 0 && errno != ENOENT) {
		warn_once(c, why);
		c->off = 1;
	}
	return c->rfd;
}

/* Read file name in dirfd into b: a regular file of ours, capped. 0 or -1. */
static int read_file(int dirfd, const char *name, struct buf *b)
{
	struct stat st;
	int fd, r = -1;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    (uint64_t)st.st_size <= LINETAB_MAX_BYTES)
		r = buf_read_fd(b, fd);
	close(fd);
	return r;
}

/* Merge build ID t's file as it is now into t. */
static void merge_file(int dirfd, struct linetab *t)
{
	char name[LINETAB_MAX_BUILD_ID + sizeof(EXT)];
	struct buf b;
	size_t added;

	snprintf(name, sizeof(name), "%s" EXT, linetab_build_id(t));
	buf_init(&b, LINETAB_MAX_BYTES);
	if (read_file(dirfd, name, &b) == 0)
		(void)linetab_merge(t, b.data, b.len, &added); /* a bad file is ignored, then replaced */
	buf_release(&b);
}

int linecache_trusted(const struct dwlines *l, const char *build_id)
{
	char hex[LINETAB_MAX_BUILD_ID + 1];
	struct stat st;

	return dwlines_file(l, &st, hex, sizeof(hex)) == 0 && S_ISREG(st.st_mode) &&
	       (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
	       build_id && !strcmp(hex, build_id);
}

struct linetab *linecache_table(struct linecache *c, const char *build_id, uint64_t dev,
				uint64_t inode)
{
	char key[LINETAB_MAX_BUILD_ID + 1];
	struct table *v;
	size_t i;
	int fd, n;

	if (!c || c->off || !build_id || !*build_id || strchr(build_id, '-'))
		return NULL;
	n = snprintf(key, sizeof(key), "%s-%llx-%llx", build_id, (unsigned long long)dev,
		     (unsigned long long)inode);
	if (n < 0 || (size_t)n >= sizeof(key) || !linetab_key_ok(key))
		return NULL;
	build_id = key;
	for (i = 0; i < c->n; i++) {
		if (!strcmp(linetab_build_id(c->v[i].t), build_id))
			return c->v[i].t;
	}
	fd = dir_read(c);
	if (c->off)
		return NULL;
	v = array_grow(c->v, &c->cap, c->n + 1, sizeof(*v), LINECACHE_MAX_TABLES);
	if (!v)
		return NULL;
	c->v = v;
	v = &c->v[c->n];
	v->t = linetab_new(build_id);
	if (!v->t)
		return NULL;
	if (fd >= 0)
		merge_file(fd, v->t);
	v->saved = linetab_count(v->t);
	v->used = 1;
	c->n++;
	return v->t;
}

/* flock() the directory, waiting at most LINECACHE_LOCK_WAIT_MS. 1 when held. */
static int lock_dir(int fd)
{
	struct timespec ms5 = { 0, 5000000 };
	int i;

	for (i = 0; i < LINECACHE_LOCK_WAIT_MS / 5; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 1;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return 0;
		nanosleep(&ms5, NULL);
	}
	return 0;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write t as its file: temporary, rename. 0 or -1 with errno. */
static int write_table(int dirfd, struct linetab *t)
{
	char name[LINETAB_MAX_BUILD_ID + sizeof(EXT)], tmp[LINETAB_MAX_BUILD_ID + 64];
	struct buf b;
	int fd, r = -1, e;

	snprintf(name, sizeof(name), "%s" EXT, linetab_build_id(t));
	snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", linetab_build_id(t), (int)getpid());
	buf_init(&b, LINETAB_MAX_BYTES);
	if (linetab_write(t, &b) < 0)
		goto out;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* Left by a killed run whose pid was ours. */
		unlinkat(dirfd, tmp, 0);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		goto out;
	if (write_all(fd, b.data, b.len) < 0) {
		e = errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		errno = e;
		goto out;
	}
	close(fd);
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		e = errno;
		unlinkat(dirfd, tmp, 0);
		errno = e;
		goto out;
	}
	r = 0;
out:
	buf_release(&b);
	return r;
}

struct file_age {
	char name[LINETAB_MAX_BUILD_ID + sizeof(EXT)];
	time_t mtime;
	uint64_t size;
};

static int by_mtime(const void *a, const void *b)
{
	const struct file_age *x = a, *y = b;

	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Keep the directory under its caps (oldest first out); drop stale temporaries. */
static void trim(int dirfd)
{
	struct file_age *v = NULL, *nv;
	size_t n = 0, cap = 0, l, i;
	uint64_t bytes = 0;
	struct dirent *de;
	struct stat st;
	time_t now = time(NULL);
	DIR *d;
	int fd;

	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (i = 0; (de = readdir(d)) && i < LIST_MAX; i++) {
		l = strlen(de->d_name);
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (de->d_name[0] == '.' && l > 4 && !strcmp(de->d_name + l - 4, ".tmp")) {
			if (now - st.st_mtime > STALE_TMP_S)
				unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		if (l <= sizeof(EXT) - 1 || l >= sizeof(v->name) ||
		    strcmp(de->d_name + l - (sizeof(EXT) - 1), EXT))
			continue;
		nv = array_grow(v, &cap, n + 1, sizeof(*v), LIST_MAX);
		if (!nv)
			break;
		v = nv;
		memcpy(v[n].name, de->d_name, l + 1);
		v[n].mtime = st.st_mtime;
		v[n].size = (uint64_t)st.st_size;
		bytes += v[n++].size;
	}
	closedir(d);
	if (n > LINECACHE_DIR_FILES || bytes > LINECACHE_DIR_BYTES) {
		qsort(v, n, sizeof(*v), by_mtime);
		for (i = 0; i < n && (n - i > LINECACHE_DIR_FILES || bytes > LINECACHE_DIR_BYTES); i++) {
			unlinkat(dirfd, v[i].name, 0);
			bytes -= v[i].size;
		}
	}
	free(v);
}

int linecache_flush(struct linecache *c)
{
	char why[PATH_MAX + 128], name[LINETAB_MAX_BUILD_ID + sizeof(EXT)];
	size_t i, wrote = 0;
	int locked = 0, r = 0, fd;

	if (!c || c->off)
		return 0;
	for (i = 0; i < c->n; i++) {
		struct table *tb = &c->v[i];

		if (linetab_count(tb->t) <= tb->saved)
			continue;
		if (c->wfd < 0) {
			c->wfd = privdir_open(c->dir, WHAT, 1, why, sizeof(why));
			if (c->wfd < 0) {
				warn_once(c, why);
				c->off = 1;
				return -1;
			}
		}
		if (!locked)
			locked = lock_dir(c->wfd) ? 1 : -1;
		merge_file(c->wfd, tb->t);
		if (write_table(c->wfd, tb->t) < 0) {
			snprintf(why, sizeof(why), "cannot write to the " WHAT " \"%s\": %s", c->dir,
				 strerror(errno));
			warn_once(c, why);
			r = -1;
			break;
		}
		tb->saved = linetab_count(tb->t);
		tb->used = 0; /* just written: as fresh as a touch */
		wrote++;
	}
	if (wrote)
		trim(c->wfd);
	if (locked > 0)
		flock(c->wfd, LOCK_UN);
	/* The files read from and not rewritten: used now, last out of a trim. */
	fd = c->wfd >= 0 ? c->wfd : c->rfd;
	for (i = 0; fd >= 0 && i < c->n; i++) {
		if (!c->v[i].used || !c->v[i].saved)
			continue;
		snprintf(name, sizeof(name), "%s" EXT, linetab_build_id(c->v[i].t));
		utimensat(fd, name, NULL, AT_SYMLINK_NOFOLLOW);
		c->v[i].used = 0;
	}
	return r;
}
