/*
 * spool.c — the spool directory. The cap is kept by listing and stat()ing
 * the entries at each addition: at one capture a minute, and a few
 * thousand entries at most under a sensible cap, that is far cheaper than
 * the capture itself, and it needs no index file that a crash could leave
 * inconsistent with the directory. Locks are flock(2) on the data file,
 * released by the kernel when a process dies, so a SIGKILLed cprof-attach
 * leaves no entry stuck. Every name is used relative to the directory's
 * descriptor, opened and checked once (common/privdir.h): renaming the
 * directory away and planting another, or a symlink, at its path later
 * changes nothing for this run.
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
#include <unistd.h>

#include "attach/push/spool.h"
#include "common/err.h"
#include "common/privdir.h"
#include "writer/outfile.h"

#define DATA_EXT ".pb.gz"
#define META_EXT ".meta"

struct spool {
	char dir[PATH_MAX - SPOOL_STEM_MAX - 32]; /* for messages */
	int dfd;                                  /* the directory, checked */
	uint64_t cap;
	char lock[NAME_MAX + 1]; /* this run's lock file in dfd, "" when none */
	int lock_fd;
};

static int spool_path(const struct spool *sp, const char *stem, const char *ext, char *out,
		      size_t cap);

/* Open name in the spool for reading: a regular file, no link followed, no blocking open. */
static int spool_open_file(const struct spool *sp, const char *name)
{
	return openat(sp->dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
}

int spool_open(struct spool **sp, const char *dir, uint64_t cap)
{
	struct spool *s;
	char why[PATH_MAX + 128];
	int fd;

	*sp = NULL;
	if (strlen(dir) >= sizeof(s->dir))
		return error("spool directory \"%s\": name too long", dir);
	/*
	 * What is spooled is profiles, later sent with our credentials: a
	 * directory someone else owns or may write to (the /tmp fallback made
	 * first by another user, a symlink) could read them or plant entries.
	 */
	fd = privdir_open(dir, "spool directory", 1, why, sizeof(why));
	if (fd < 0)
		return error("%s", why);
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return error("out of memory");
	}
	s->dfd = fd;
	memcpy(s->dir, dir, strlen(dir) + 1);
	s->cap = cap;
	s->lock_fd = -1;
	*sp = s;
	return 0;
}

void spool_release(struct spool *sp)
{
	if (sp->lock_fd >= 0) {
		unlinkat(sp->dfd, sp->lock, 0);
		close(sp->lock_fd);
	}
	close(sp->dfd);
	free(sp);
}

int spool_lock_run(struct spool *sp, const char *run)
{
	char tmp[NAME_MAX + 1];
	int fd, n;

	n = snprintf(sp->lock, sizeof(sp->lock), ".run-%s.lock", run);
	if (n < 0 || (size_t)n >= sizeof(sp->lock) ||
	    snprintf(tmp, sizeof(tmp), "%s.tmp", sp->lock) >= (int)sizeof(tmp))
		return error("spool directory \"%s\": name too long", sp->dir);
	fd = openat(sp->dfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return error_errno("cannot create a lock in the spool directory \"%s\"", sp->dir);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || renameat(sp->dfd, tmp, sp->dfd, sp->lock) < 0) {
		error_errno("cannot lock the spool directory \"%s\"", sp->dir);
		unlinkat(sp->dfd, tmp, 0);
		close(fd);
		return -1;
	}
	sp->lock_fd = fd;
	return 0;
}

int spool_run_alive(const struct spool *sp, const char *run)
{
	char path[NAME_MAX + 1];
	int fd, n, alive;

	n = snprintf(path, sizeof(path), ".run-%s.lock", run);
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0;
	fd = spool_open_file(sp, path);
	if (fd < 0)
		return 0;
	alive = flock(fd, LOCK_SH | LOCK_NB) < 0;
	if (!alive)
		unlinkat(sp->dfd, path, 0); /* a run that died: its lock file is left over */
	close(fd);
	return alive;
}

int spool_has(const struct spool *sp, const char *stem)
{
	char path[NAME_MAX + 1];
	struct stat st;

	return spool_path(sp, stem, DATA_EXT, path, sizeof(path)) == 0 &&
	       fstatat(sp->dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

const char *spool_dir(const struct spool *sp)
{
	return sp->dir;
}

/* STEM.EXT, the name in the directory, into out; -1 when it does not fit or is not one name. */
static int spool_path(const struct spool *sp, const char *stem, const char *ext, char *out,
		      size_t cap)
{
	int n = snprintf(out, cap, "%s%s", stem, ext);

	(void)sp;
	return n < 0 || (size_t)n >= cap || strchr(out, '/') || stem[0] == '.' ? -1 : 0;
}

static int stem_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

long spool_list(struct spool *sp, char (**stems)[SPOOL_STEM_MAX])
{
	char (*v)[SPOOL_STEM_MAX] = NULL, (*nv)[SPOOL_STEM_MAX];
	size_t n = 0, cap = 0, l;
	struct dirent *de;
	DIR *d;
	int fd;

	*stems = NULL;
	fd = openat(sp->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) && n < SPOOL_LIST_MAX) {
		l = strlen(de->d_name);
		/* Only our names: a digit first (the start time), hidden temporaries left alone. */
		if (l <= sizeof(DATA_EXT) - 1 || l - (sizeof(DATA_EXT) - 1) >= SPOOL_STEM_MAX ||
		    de->d_name[0] < '0' || de->d_name[0] > '9' ||
		    strcmp(de->d_name + l - (sizeof(DATA_EXT) - 1), DATA_EXT) != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -1;
			}
			v = nv;
		}
		memcpy(v[n], de->d_name, l - (sizeof(DATA_EXT) - 1));
		v[n][l - (sizeof(DATA_EXT) - 1)] = 0;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), stem_cmp);
	*stems = v;
	return (long)n;
}

/* Bytes the entry takes (data and metadata); 0 when it is gone. */
static uint64_t spool_entry_size(const struct spool *sp, const char *stem)
{
	char path[NAME_MAX + 1];
	struct stat st;
	uint64_t n = 0;

	if (spool_path(sp, stem, DATA_EXT, path, sizeof(path)) == 0 &&
	    fstatat(sp->dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		n += (uint64_t)st.st_size;
	if (spool_path(sp, stem, META_EXT, path, sizeof(path)) == 0 &&
	    fstatat(sp->dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		n += (uint64_t)st.st_size;
	return n;
}

/* Remove an entry's files, the data file last (it is what makes an entry). */
static void spool_unlink(const struct spool *sp, const char *stem)
{
	char path[NAME_MAX + 1];

	if (spool_path(sp, stem, META_EXT, path, sizeof(path)) == 0)
		unlinkat(sp->dfd, path, 0);
	if (spool_path(sp, stem, DATA_EXT, path, sizeof(path)) == 0)
		unlinkat(sp->dfd, path, 0);
}

/* Drop stem unless another process is sending it. 1 when dropped. */
static int spool_drop_one(const struct spool *sp, const char *stem)
{
	char path[NAME_MAX + 1];
	int fd;

	if (spool_path(sp, stem, DATA_EXT, path, sizeof(path)) < 0)
		return 0;
	fd = spool_open_file(sp, path);
	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return 0;
	}
	spool_unlink(sp, stem);
	close(fd);
	return 1;
}

/* Write len bytes to DIR/STEM.EXT atomically. 0 or -1 (message printed). */
static int spool_write(const struct spool *sp, const char *stem, const char *ext, const void *data,
		       size_t len)
{
	char path[NAME_MAX + 1], shown[PATH_MAX + NAME_MAX + 2];
	struct outfile o;

	if (spool_path(sp, stem, ext, path, sizeof(path)) < 0)
		return error("spool entry \"%s\": name too long", stem);
	snprintf(shown, sizeof(shown), "%s/%s", sp->dir, path);
	if (outfile_openat(&o, sp->dfd, path, shown) < 0)
		return -1;
	if (outfile_write(&o, data, len) < 0) {
		outfile_abort(&o);
		return -1;
	}
	return outfile_commit(&o);
}

int spool_add(struct spool *sp, const char *stem, const struct spool_meta *m, const void *data,
	      size_t len, spool_drop_fn *drop, void *ctx)
{
	char meta[SPOOL_META_MAX + 1], (*stems)[SPOOL_STEM_MAX] = NULL;
	uint64_t total = 0, *sizes = NULL, need;
	long n, i;
	int ml;

	ml = spool_meta_format(m, meta, sizeof(meta));
	if (ml < 0)
		return error("spool entry \"%s\": metadata too long", stem);
	need = (uint64_t)len + (uint64_t)ml;
	if (need > sp->cap) {
		drop(ctx, stem);
		return 1;
	}
	n = spool_list(sp, &stems);
	if (n < 0)
		return error_errno("cannot list the spool directory \"%s\"", sp->dir);
	sizes = n ? calloc((size_t)n, sizeof(*sizes)) : NULL;
	if (n && !sizes) {
		free(stems);
		return error("out of memory");
	}
	for (i = 0; i < n; i++)
		total += sizes[i] = spool_entry_size(sp, stems[i]);
	/* Oldest first, skipping any another process is sending right now. */
	for (i = 0; i < n && total + need > sp->cap; i++) {
		if (!spool_drop_one(sp, stems[i]))
			continue;
		total -= sizes[i];
		drop(ctx, stems[i]);
	}
	free(sizes);
	free(stems);
	if (total + need > sp->cap) {
		drop(ctx, stem);
		return 1;
	}
	if (spool_write(sp, stem, META_EXT, meta, (size_t)ml) < 0)
		return -1;
	if (spool_write(sp, stem, DATA_EXT, data, len) < 0) {
		spool_unlink(sp, stem);
		return -1;
	}
	return 0;
}

int spool_take(struct spool *sp, const char *stem, struct spool_item *it)
{
	char path[NAME_MAX + 1], meta[SPOOL_META_MAX + 1];
	struct stat st;
	ssize_t r;
	int fd, mfd;

	memset(it, 0, sizeof(*it));
	it->fd = -1;
	buf_init(&it->data, SPOOL_DATA_MAX);
	if (strlen(stem) >= sizeof(it->stem) || spool_path(sp, stem, DATA_EXT, path, sizeof(path)) < 0)
		return 2;
	memcpy(it->stem, stem, strlen(stem) + 1);
	fd = spool_open_file(sp, path);
	if (fd < 0)
		return 1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || fstat(fd, &st) < 0 || st.st_nlink == 0) {
		close(fd); /* another process sends it, or sent it and removed it */
		return 1;
	}
	it->fd = fd;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > SPOOL_DATA_MAX ||
	    buf_read_fd(&it->data, fd) < 0 || it->data.len == 0)
		goto bad;
	if (spool_path(sp, stem, META_EXT, path, sizeof(path)) < 0)
		goto bad;
	mfd = spool_open_file(sp, path);
	if (mfd < 0)
		goto bad;
	r = fstat(mfd, &st) == 0 && S_ISREG(st.st_mode) ? read(mfd, meta, sizeof(meta)) : -1;
	close(mfd);
	if (r < 0 || (size_t)r > SPOOL_META_MAX || spool_meta_parse(meta, (size_t)r, &it->meta) < 0)
		goto bad;
	return 0;
bad:
	spool_done(sp, it, 0);
	return 2;
}

void spool_done(struct spool *sp, struct spool_item *it, int remove)
{
	if (it->fd >= 0) {
		if (remove)
			spool_unlink(sp, it->stem);
		close(it->fd);
	}
	it->fd = -1;
	buf_release(&it->data);
}
