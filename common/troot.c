/*
 * troot.c — opening what a target named as the target would (troot.h):
 * the resolution inside its root (openat2, or the walk where openat2 is
 * missing), the check of the file's type on its descriptor, the reopen for
 * reading through /proc/self/fd, and the switch of this thread's
 * file-system credentials around both. Also the small set that lets a
 * caller note a refused file once per run, and the escaping of a path for
 * a note.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/fnv.h"
#include "common/proc.h"
#include "common/troot.h"

#define WALK_MAX_DEPTH 256
#define STATUS_MAX 8192
#define SEEN_SLOTS 4096
#define OPENAT2_RETRIES 8

int troot_test_no_openat2;
int troot_test_no_switch;

static int no_openat2; /* the kernel said ENOSYS once */

/* Parse the 4th number after "\nTAG" (the fs id of a Uid:/Gid: line). 0 or -1. */
static int status_fs_id(const char *buf, const char *tag, unsigned long *out)
{
	const char *s = strstr(buf, tag);
	char *e;
	int i;

	if (!s)
		return -1;
	s += strlen(tag);
	for (i = 0; i < 4; i++) {
		errno = 0;
		*out = strtoul(s, &e, 10);
		if (e == s || errno || *out > UINT32_MAX - 1)
			return -1;
		s = e;
	}
	return 0;
}

int troot_cred_read(pid_t pid, struct troot_cred *c)
{
	char p[64], buf[STATUS_MAX], *s, *e, *eol;
	unsigned long v;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	n = proc_read(p, buf, sizeof(buf));
	if (n < 0)
		return -1;
	memset(c, 0, sizeof(*c));
	if (status_fs_id(buf, "\nUid:", &v) < 0)
		goto bad;
	c->fsuid = (uid_t)v;
	if (status_fs_id(buf, "\nGid:", &v) < 0)
		goto bad;
	c->fsgid = (gid_t)v;
	s = strstr(buf, "\nGroups:");
	if (!s)
		return 0;
	s += 8;
	eol = strchr(s, '\n');
	for (;;) {
		errno = 0;
		v = strtoul(s, &e, 10);
		if (e == s || errno || v > UINT32_MAX - 1 || (eol && e > eol))
			break;
		/* A number cut by the buffer's end may be another group: dropped. */
		if ((!eol && !*e) || c->ngroups == TROOT_MAX_GROUPS)
			break;
		c->groups[c->ngroups++] = (gid_t)v;
		s = e;
	}
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int troot_root_open(pid_t pid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	return open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int troot_may_read(const struct stat *st, const struct troot_cred *c)
{
	size_t i;

	if (c->fsuid == 0)
		return 1;
	if (st->st_uid == c->fsuid)
		return (st->st_mode & S_IRUSR) != 0; /* the owner's bits decide, even when "other" has more */
	if (st->st_gid == c->fsgid)
		return (st->st_mode & S_IRGRP) != 0;
	for (i = 0; i < c->ngroups; i++)
		if (st->st_gid == c->groups[i])
			return (st->st_mode & S_IRGRP) != 0;
	return (st->st_mode & S_IROTH) != 0;
}

/* This thread's credentials before a switch, and what the switch changed. */
struct saved {
	uid_t fsuid;
	gid_t fsgid;
	int ngroups;
	int pdeath;
	gid_t groups[TROOT_MAX_GROUPS];
};

static pthread_once_t dumpable_once = PTHREAD_ONCE_INIT;
static int dumpable_at_start = 1;

static void dumpable_read(void)
{
	int d = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);

	if (d >= 0)
		dumpable_at_start = d;
}

static uid_t cur_fsuid(void)
{
	return (uid_t)syscall(SYS_setfsuid, (uid_t)-1); /* -1 is refused: returns the current one */
}

static gid_t cur_fsgid(void)
{
	return (gid_t)syscall(SYS_setfsgid, (gid_t)-1);
}

/*
 * Back to s on this thread. The kernel makes a process undumpable and
 * clears the thread's parent-death signal when fs ids change; both are
 * put back as they were, since the ids are.
 */
static void switch_back(const struct saved *s)
{
	syscall(SYS_setfsuid, s->fsuid);
	syscall(SYS_setfsgid, s->fsgid);
	syscall(SYS_setgroups, (size_t)s->ngroups, s->groups);
	prctl(PR_SET_DUMPABLE, dumpable_at_start, 0, 0, 0);
	prctl(PR_SET_PDEATHSIG, s->pdeath, 0, 0, 0);
	if (cur_fsuid() != s->fsuid || cur_fsgid() != s->fsgid)
		abort(); /* going back to our own ids cannot fail; never go on as another user */
}

static int same_groups(const struct troot_cred *c, const struct saved *s)
{
	size_t i;

	if ((size_t)s->ngroups != c->ngroups)
		return 0;
	for (i = 0; i < c->ngroups; i++)
		if (s->groups[i] != c->groups[i])
			return 0;
	return 1;
}

/*
 * Switch this thread's fsuid, fsgid and groups to c's (raw system calls:
 * glibc's wrappers would change every thread). 1 switched, 0 nothing to
 * switch (the same ids), -1 refused (nothing changed).
 */
static int switch_to(const struct troot_cred *c, struct saved *s)
{
	pthread_once(&dumpable_once, dumpable_read);
	s->fsuid = cur_fsuid();
	s->fsgid = cur_fsgid();
	s->ngroups = getgroups(TROOT_MAX_GROUPS, s->groups);
	if (s->ngroups < 0)
		return -1;
	if (s->fsuid == c->fsuid && s->fsgid == c->fsgid && same_groups(c, s))
		return 0;
	if (troot_test_no_switch)
		return -1;
	s->pdeath = 0;
	prctl(PR_GET_PDEATHSIG, &s->pdeath, 0, 0, 0);
	if (syscall(SYS_setgroups, c->ngroups, c->groups) < 0)
		return -1;
	syscall(SYS_setfsgid, c->fsgid);
	syscall(SYS_setfsuid, c->fsuid);
	if (cur_fsgid() != c->fsgid || cur_fsuid() != c->fsuid) {
		switch_back(s);
		return -1;
	}
	return 1;
}

/* openat2 in the root: an O_PATH fd, or -1 with errno (ENOSYS: use the walk). */
static int resolve_openat2(int rootfd, const char *path, unsigned flags)
{
	struct open_how how;
	int fd, i;

	memset(&how, 0, sizeof(how));
	how.flags = O_PATH | O_CLOEXEC | (flags & TROOT_FOLLOW ? 0 : O_NOFOLLOW);
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	for (i = 0; i < OPENAT2_RETRIES; i++) {
		fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			return fd;
	}
	return -1; /* EAGAIN: renames raced every try */
}

/*
 * The walk, for kernels without openat2: one component at a time with
 * O_PATH | O_NOFOLLOW under the directory of the one before; the kernel is
 * never asked for "..", so a directory moved away while walked cannot lead
 * out. An O_PATH fd (of a symbolic link when the last one is not
 * followed), or -1 with errno.
 */
static int resolve_walk(int rootfd, const char *path, unsigned flags)
{
	char rest[2 * TROOT_MAX_PATH], link[TROOT_MAX_PATH], comp[NAME_MAX + 1];
	int stack[WALK_MAX_DEPTH];
	size_t depth = 0, at = 0, links = 0, len = strlen(path), n, tail;
	struct stat st;
	int fd = -1, e = 0, last;
	ssize_t k;

	if (len >= sizeof(rest)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(rest, path, len + 1);
	for (;;) {
		int cur = depth ? stack[depth - 1] : rootfd;

		at += strspn(rest + at, "/");
		if (!rest[at]) { /* the path names a directory */
			if ((fd = openat(cur, ".", O_PATH | O_CLOEXEC)) < 0)
				e = errno;
			break;
		}
		n = strcspn(rest + at, "/");
		if (n > NAME_MAX) {
			e = ENAMETOOLONG;
			break;
		}
		memcpy(comp, rest + at, n);
		comp[n] = 0;
		at += n;
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			if (depth)
				close(stack[--depth]); /* at the root: stays there */
			continue;
		}
		last = !rest[at + strspn(rest + at, "/")];
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			e = errno;
			break;
		}
		if (S_ISLNK(st.st_mode) && (!last || (flags & TROOT_FOLLOW))) {
			k = ++links > TROOT_MAX_LINKS ? -2 : readlinkat(fd, "", link, sizeof(link));
			close(fd);
			fd = -1;
			e = k == -2 ? ELOOP : k < 0 ? errno : k == 0 ? ENOENT : ENAMETOOLONG;
			tail = strlen(rest + at);
			if (k <= 0 || (size_t)k >= sizeof(link) || (size_t)k + 1 + tail >= sizeof(rest))
				break;
			/* rest = the link's text, "/", what followed the link */
			memmove(rest + k + 1, rest + at, tail + 1);
			memcpy(rest, link, (size_t)k);
			rest[k] = '/';
			at = 0;
			e = 0;
			if (link[0] == '/')
				while (depth)
					close(stack[--depth]); /* absolute: from the root again */
			continue;
		}
		if (last)
			break;
		e = !S_ISDIR(st.st_mode) ? ENOTDIR : depth == WALK_MAX_DEPTH ? ENAMETOOLONG : 0;
		if (e) {
			close(fd);
			fd = -1;
			break;
		}
		stack[depth++] = fd;
		fd = -1;
	}
	while (depth)
		close(stack[--depth]);
	if (fd < 0)
		errno = e ? e : ENOENT;
	return fd;
}

static int resolve(int rootfd, const char *path, unsigned flags)
{
	int fd;

	if (!no_openat2 && !troot_test_no_openat2) {
		fd = resolve_openat2(rootfd, path, flags);
		if (fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != EAGAIN))
			return fd;
		if (errno == ENOSYS)
			no_openat2 = 1;
		/* EPERM: a seccomp filter that refuses openat2; the walk is as sound */
	}
	return resolve_walk(rootfd, path, flags);
}

const char *troot_target_path(pid_t pid, const char *path)
{
	char p[64], r[TROOT_MAX_PATH];
	ssize_t n;

	if (pid <= 0)
		return path;
	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	n = readlink(p, r, sizeof(r));
	if (n <= 1 || (size_t)n >= sizeof(r) || r[0] != '/')
		return path; /* "/": its own namespace's paths, already its view */
	if (!strncmp(path, r, (size_t)n) && path[n] == '/')
		return path + n;
	return path;
}

/* Why st is not a file to read: NULL when it is a regular file. */
static const char *type_refusal(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return NULL;
	if (S_ISFIFO(st->st_mode))
		return "a FIFO";
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return "a device";
	if (S_ISSOCK(st->st_mode))
		return "a socket";
	if (S_ISDIR(st->st_mode))
		return "a directory";
	if (S_ISLNK(st->st_mode))
		return "a symbolic link";
	return "not a regular file";
}

/* The type check on fd (O_PATH), filling st; 0, or -1 with errno and *why. */
static int check_type(int fd, struct stat *st, const char **why)
{
	struct statfs sf;

	if (fstat(fd, st) < 0)
		return -1;
	if ((*why = type_refusal(st))) {
		errno = EPERM;
		return -1;
	}
	/* Files of the kernel's own: a target never wrote them, /proc/self would be ours. */
	if (fstatfs(fd, &sf) == 0 && (sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC)) {
		*why = "a file of /proc or /sys";
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* Open the regular file that the O_PATH fd names, for reading. */
static int reopen(int fd)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

int troot_reopen(int fd, const char **why)
{
	struct stat st;

	*why = NULL;
	if (check_type(fd, &st, why) < 0)
		return -1;
	return reopen(fd);
}

int troot_openat(int rootfd, const struct troot_cred *c, const char *path, unsigned flags,
		 const char **why)
{
	struct saved sv;
	struct stat st;
	int sw = 0, pfd = -1, fd = -1, e = 0;

	*why = NULL;
	if (strnlen(path, TROOT_MAX_PATH) >= TROOT_MAX_PATH) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (c)
		sw = switch_to(c, &sv);
	pfd = resolve(rootfd, path, flags);
	if (pfd < 0) {
		e = errno;
		if (e == ELOOP)
			*why = "a symbolic link loop, a link into /proc, or a link where none may be";
		goto out;
	}
	if (check_type(pfd, &st, why) < 0) {
		e = errno;
		goto out;
	}
	if (sw < 0 && !troot_may_read(&st, c)) {
		e = EACCES; /* the switch was refused: the owner and mode decide */
		goto out;
	}
	if ((fd = reopen(pfd)) < 0)
		e = errno;
out:
	if (sw > 0)
		switch_back(&sv);
	if (pfd >= 0)
		close(pfd);
	if (fd < 0) {
		if (e == EACCES || e == EPERM)
			*why = *why ? *why : "not readable by the target";
		errno = e;
	}
	return fd;
}

int troot_open(pid_t pid, const char *path, unsigned flags, const char **why)
{
	struct troot_cred c;
	int rootfd, fd, e;

	*why = NULL;
	if (pid > 0 && troot_cred_read(pid, &c) < 0)
		return -1; /* not knowing whose it is, nothing is read for it */
	rootfd = pid > 0 ? troot_root_open(pid) : open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -1;
	fd = troot_openat(rootfd, pid > 0 ? &c : NULL, path, flags, why);
	e = errno;
	close(rootfd);
	errno = e;
	return fd;
}

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seen[SEEN_SLOTS];
static size_t nseen;

int troot_first_time(const char *key)
{
	uint64_t h = fnv_bytes(FNV_OFFSET, key, strlen(key)) | 1; /* 0 marks a free slot */
	size_t i = (size_t)h % SEEN_SLOTS;
	int first = 0;

	pthread_mutex_lock(&seen_lock);
	while (seen[i] && seen[i] != h)
		i = (i + 1) % SEEN_SLOTS;
	if (!seen[i] && nseen < SEEN_SLOTS / 2) {
		seen[i] = h;
		nseen++;
		first = 1;
	}
	pthread_mutex_unlock(&seen_lock);
	return first;
}

