/*
 * debugfind.c — the local search for a separate debug file: paths built
 * from the build ID and from the object's .gnu_debuglink, each opened
 * inside the target's root with the target's credentials
 * (common/troot.h), never on the host; a build-ID file checked by its own
 * build ID and a debug link's candidate by the CRC-32 of its whole
 * contents (read once per file and kept, in 1 MiB blocks, only for a file
 * under DEBUGFIND_CRC_MAX that is not mostly holes), so that a stale debug
 * file left from an earlier build is never believed and a huge or sparse
 * file costs nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/err.h"
#include "common/troot.h"
#include "unwind/debugfind.h"
#include "unwind/elfimg.h"

#define DEBUG_ROOT "/usr/lib/debug"
#define LINK_MAX_NAME 1024
#define CRC_BLOCK (1u << 20)
#define CRC_KEEP 1024

const char *debug_how_name(enum debug_how how)
{
	switch (how) {
	case DEBUG_SELF: return "own sections";
	case DEBUG_BUILD_ID: return "build-id";
	case DEBUG_LINK: return "debuglink";
	case DEBUG_MINI: return "minidebuginfo";
	case DEBUG_DEBUGINFOD: return "debuginfod";
	default: return "none";
	}
}

/* A refused file, noted once per run. */
static void refused(const char *path, const char *why)
{
	if (why && troot_first_time(path))
		note("debug file %s: %s, not used", path, why);
}

/*
 * Open path (absolute, as the target sees it) in pid's root, or with pid 0
 * on the host as cprof (a --debug-dir): a regular file that could be ELF.
 */
static int open_rooted(pid_t pid, const char *path)
{
	const char *why = NULL;
	struct stat st;
	int fd;

	fd = troot_open(pid, path, TROOT_FOLLOW, &why);
	if (fd < 0) {
		refused(path, why);
		return -1;
	}
	if (fstat(fd, &st) == 0 && st.st_size >= 64)
		return fd;
	close(fd);
	return -1;
}

static int hex_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 4 || n > 128)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

const char *debugfind_crc_refusal(const struct stat *st)
{
	if ((uint64_t)st->st_size > DEBUGFIND_CRC_MAX)
		return "larger than the 2 GiB a debug link's CRC is computed over";
	/* Holes read as zeros at no cost to whoever made them: refused. */
	if ((uint64_t)st->st_size > DEBUGFIND_SPARSE_MIN &&
	    (uint64_t)st->st_blocks * 512 < (uint64_t)st->st_size / 8)
		return "a sparse file (mostly holes)";
	return NULL;
}

int debugfind_crc(int fd, uint32_t *crc)
{
	unsigned char *buf;
	uLong c = crc32(0L, Z_NULL, 0);
	struct stat st;
	off_t off = 0;
	ssize_t n = 0;

	if (fstat(fd, &st) < 0)
		return -1;
	if (debugfind_crc_refusal(&st)) {
		errno = EFBIG;
		return -1;
	}
	if (!(buf = malloc(CRC_BLOCK)))
		return -1;
	/* Never past the size checked: a file that grows meanwhile is cut there. */
	while (off < st.st_size &&
	       (n = pread(fd, buf, st.st_size - off < CRC_BLOCK ? (size_t)(st.st_size - off) : CRC_BLOCK,
			  off)) > 0) {
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	free(buf);
	if (n < 0)
		return -1;
	*crc = (uint32_t)c;
	return 0;
}

/* The CRCs computed in this run, by the file's identity: each file is read once. */
struct crc_kept {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
	uint32_t crc;
};

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct crc_kept kept[CRC_KEEP];
static size_t nkept, kept_next;

static void kept_key(const struct stat *st, struct crc_kept *k)
{
	k->dev = st->st_dev;
	k->ino = st->st_ino;
	k->size = (uint64_t)st->st_size;
	k->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	k->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

static int kept_same(const struct crc_kept *a, const struct crc_kept *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* The CRC of the file on fd, kept or computed; 0, or -1 with *why when refused. */
static int crc_of(int fd, uint32_t *crc, const char **why)
{
	struct crc_kept k;
	struct stat st;
	size_t i;
	int found = 0;

	*why = NULL;
	if (fstat(fd, &st) < 0)
		return -1;
	if ((*why = debugfind_crc_refusal(&st)))
		return -1;
	kept_key(&st, &k);
	pthread_mutex_lock(&kept_lock);
	for (i = 0; i < nkept && !found; i++)
		if (kept_same(&kept[i], &k))
			*crc = kept[i].crc, found = 1;
	pthread_mutex_unlock(&kept_lock);
	if (found)
		return 0;
	if (debugfind_crc(fd, crc) < 0)
		return -1;
	k.crc = *crc;
	pthread_mutex_lock(&kept_lock);
	kept[kept_next] = k; /* full: the oldest goes */
	kept_next = (kept_next + 1) % CRC_KEEP;
	if (nkept < CRC_KEEP)
		nkept++;
	pthread_mutex_unlock(&kept_lock);
	return 0;
}

int debugfind_parse_link(const unsigned char *sec, size_t len, const char **name, uint32_t *crc)
{
	const unsigned char *nul;
	size_t at;

	if (!sec || len < 8 || len > LINK_MAX_NAME + 8)
		return -1;
	nul = memchr(sec, 0, len);
	if (!nul || nul == sec)
		return -1;
	at = ((size_t)(nul - sec) + 1 + 3) & ~(size_t)3; /* the CRC is 4-aligned after the NUL */
	if (at + 4 > len || memchr(sec, '/', (size_t)(nul - sec)))
		return -1;
	memcpy(crc, sec + at, 4);
	*name = (const char *)sec;
	return 0;
}

/* The candidates of a debug link, in the order GDB tries them. */
static int open_link(pid_t pid, const char *path, const char *name, uint32_t want)
{
	char dir[4096], cand[4200];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	const char *why;
	uint32_t crc;
	size_t dl;
	int i, fd;

	if (!slash || path[0] != '/')
		return -1;
	dl = (size_t)(slash - path);
	if (dl >= sizeof(dir))
		return -1;
	memcpy(dir, path, dl);
	dir[dl] = 0;
	for (i = 0; i < 3; i++) {
		if (i == 0) {
			if (!strcmp(name, base))
				continue; /* the object itself */
			snprintf(cand, sizeof(cand), "%s/%s", dir, name);
		} else if (i == 1) {
			snprintf(cand, sizeof(cand), "%s/.debug/%s", dir, name);
		} else {
			snprintf(cand, sizeof(cand), DEBUG_ROOT "%s/%s", dir, name);
		}
		fd = open_rooted(pid, cand);
		if (fd < 0)
			continue;
		if (crc_of(fd, &crc, &why) == 0 && crc == want)
			return fd;
		refused(cand, why);
		close(fd);
	}
	return -1;
}

/* Whether the ELF file on fd has GNU build ID want. */
static int same_build_id(int fd, const char *want)
{
	struct elf_image *img = elf_image_open(fd);
	int same = img && !strcmp(elf_image_build_id(img), want);

	elf_image_free(img);
	return same;
}

/*
 * The user's own directories (--debug-dir), set once before any capture:
 * host paths the user chose, opened with cprof's own credentials, each
 * file still held to the object's build ID or its link's CRC.
 */
static const char *user_dirs[DEBUGFIND_DIRS_MAX];
static size_t nuser_dirs;

int debugfind_add_dir(const char *dir)
{
	if (nuser_dirs == DEBUGFIND_DIRS_MAX)
		return -1;
	user_dirs[nuser_dirs++] = dir;
	return 0;
}

/*
 * In the user's directories: DIR/.build-id/xx/rest.debug and DIR/BASE.debug
 * or DIR/BASE by build ID, then DIR/LINK by the link's CRC.
 */
static int open_user_dirs(const char *path, const char *build_id, const char *link,
			  uint32_t want, enum debug_how *how)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	const char *base = slash ? slash + 1 : path, *why;
	char cand[4200];
	uint32_t crc;
	size_t i;
	int k, fd;

	for (i = 0; i < nuser_dirs; i++) {
		for (k = 0; build_id && k < 3; k++) {
			if (k == 0)
				snprintf(cand, sizeof(cand), "%s/.build-id/%.2s/%s.debug", user_dirs[i],
					 build_id, build_id + 2);
			else if (base && *base)
				snprintf(cand, sizeof(cand), k == 1 ? "%s/%s.debug" : "%s/%s",
					 user_dirs[i], base);
			else
				continue;
			if ((fd = open_rooted(0, cand)) < 0)
				continue;
			if (same_build_id(fd, build_id)) {
				*how = DEBUG_BUILD_ID;
				return fd;
			}
			refused(cand, "its own build ID is not the object's");
			close(fd);
		}
		if (!link)
			continue;
		snprintf(cand, sizeof(cand), "%s/%s", user_dirs[i], link);
		if ((fd = open_rooted(0, cand)) < 0)
			continue;
		if (crc_of(fd, &crc, &why) == 0 && crc == want) {
			*how = DEBUG_LINK;
			return fd;
		}
		refused(cand, why ? why : "its CRC is not the one the debug link holds");
		close(fd);
	}
	return -1;
}

int debugfind_open(pid_t pid, const char *path, const char *build_id,
		   const struct elf_image *img, enum debug_how *how)
{
	const unsigned char *sec;
	const char *name;
	char p[300];
	uint64_t vaddr;
	size_t len;
	uint32_t crc = 0;
	int fd, z, linked;

	*how = DEBUG_NONE;
	if (path)
		path = troot_target_path(pid, path); /* its debug files are where it would look */
	if (build_id && hex_ok(build_id)) {
		snprintf(p, sizeof(p), DEBUG_ROOT "/.build-id/%.2s/%s.debug", build_id, build_id + 2);
		fd = open_rooted(pid, p);
		if (fd >= 0 && same_build_id(fd, build_id)) {
			*how = DEBUG_BUILD_ID;
			return fd;
		}
		if (fd >= 0) {
			refused(p, "its own build ID is not the object's");
			close(fd);
		}
	}
	linked = img && path &&
		 elf_image_section(img, ".gnu_debuglink", &sec, &len, &vaddr, &z) == 0 && !z &&
		 debugfind_parse_link(sec, len, &name, &crc) == 0;
	if (linked && (fd = open_link(pid, path, name, crc)) >= 0) {
		*how = DEBUG_LINK;
		return fd;
	}
	return open_user_dirs(path, build_id && hex_ok(build_id) ? build_id : NULL,
			      linked ? name : NULL, linked ? crc : 0, how);
}
