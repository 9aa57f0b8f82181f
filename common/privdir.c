/*
 * privdir.c — the cache directory's name and the ownership check that
 * attach/push/spool.c and unwind/linecache.c share. The check costs an
 * open and an fstat (and a mkdir per missing component when writing),
 * once per run.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/privdir.h"

const char *privdir_cache(const char *sub, char *out, size_t cap)
{
	const char *e = getenv("XDG_CACHE_HOME");
	int n;

	if (e && e[0] == '/')
		n = snprintf(out, cap, "%s/cprof/%s", e, sub);
	else if ((e = getenv("HOME")) && e[0] == '/')
		n = snprintf(out, cap, "%s/.cache/cprof/%s", e, sub);
	else if (geteuid() == 0)
		n = snprintf(out, cap, PRIVDIR_ROOT_CACHE "/%s", sub);
	else
		return NULL;
	return n < 0 || (size_t)n >= cap ? NULL : out;
}

/* mkdir -p with mode 0700 for the parts it creates. */
static int mkdir_p(const char *dir)
{
	char tmp[PATH_MAX];
	size_t i, n = strlen(dir);

	if (n == 0 || n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != 0)
			continue;
		tmp[i] = 0;
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
			return -1;
		tmp[i] = i < n ? '/' : 0;
	}
	return 0;
}

int privdir_open(const char *dir, const char *what, int write, char *why, size_t cap)
{
	struct stat st;
	int fd, e;

	if (write && mkdir_p(dir) < 0) {
		e = errno;
		snprintf(why, cap, "cannot create the %s \"%s\": %s", what, dir, strerror(e));
		errno = e;
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		/* O_NOFOLLOW with O_DIRECTORY: ELOOP or ENOTDIR for a symlink, by kernel. */
		if (e == ELOOP || (e == ENOTDIR && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode)))
			snprintf(why, cap, "%s \"%s\" is a symbolic link", what, dir);
		else if (e == ENOTDIR)
			snprintf(why, cap, "%s \"%s\" is not a directory", what, dir);
		else
			snprintf(why, cap, "cannot open the %s \"%s\": %s", what, dir, strerror(e));
		errno = e == ELOOP || e == ENOTDIR ? EPERM : e;
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		snprintf(why, cap, "cannot open the %s \"%s\": %s", what, dir, strerror(e));
		goto refused;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, cap, "%s \"%s\" belongs to another user (uid %u)", what, dir,
			 (unsigned)st.st_uid);
		e = EPERM;
		goto refused;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, cap, "%s \"%s\" is writable by others (mode %03o)", what, dir,
			 (unsigned)(st.st_mode & 0777));
		e = EPERM;
		goto refused;
	}
	if (write && faccessat(fd, ".", W_OK | X_OK, 0) < 0) {
		e = errno;
		snprintf(why, cap, "cannot write to the %s \"%s\": %s", what, dir, strerror(e));
		goto refused;
	}
	return fd;
refused:
	close(fd);
	errno = e;
	return -1;
}
