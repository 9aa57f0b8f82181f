/*
 * debugfind.c — the local search for a separate debug file: paths built
 * from the build ID and from the object's .gnu_debuglink, each opened
 * through the target's root and then the host's, and a debug link's
 * candidate checked by the CRC-32 of its whole contents (read once, in
 * 1 MiB blocks), so that a stale debug file left from an earlier build is
 * never believed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "unwind/debugfind.h"
#include "unwind/elfimg.h"

#define DEBUG_ROOT "/usr/lib/debug"
#define LINK_MAX_NAME 1024
#define CRC_BLOCK (1u << 20)

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

/* Open path (absolute, as the target sees it) in pid's root, then on the host. */
static int open_rooted(pid_t pid, const char *path)
{
	char p[4200];
	struct stat st;
	int fd, i;

	for (i = 0; i < 2; i++) {
		if (i == 0 && pid > 0)
			snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, path);
		else if (i == 1)
			snprintf(p, sizeof(p), "%s", path);
		else
			continue;
		fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 64)
			return fd;
		close(fd);
	}
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

int debugfind_crc(int fd, uint32_t *crc)
{
	unsigned char *buf = malloc(CRC_BLOCK);
	uLong c = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	if (!buf)
		return -1;
	while ((n = pread(fd, buf, CRC_BLOCK, off)) > 0) {
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	free(buf);
	if (n < 0)
		return -1;
	*crc = (uint32_t)c;
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
		if (debugfind_crc(fd, &crc) == 0 && crc == want)
			return fd;
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
	uint32_t crc;
	int fd, z;

	*how = DEBUG_NONE;
	if (build_id && hex_ok(build_id)) {
		snprintf(p, sizeof(p), DEBUG_ROOT "/.build-id/%.2s/%s.debug", build_id, build_id + 2);
		fd = open_rooted(pid, p);
		if (fd >= 0) {
			*how = DEBUG_BUILD_ID;
			return fd;
		}
	}
	if (img && path && elf_image_section(img, ".gnu_debuglink", &sec, &len, &vaddr, &z) == 0 &&
	    !z && debugfind_parse_link(sec, len, &name, &crc) == 0) {
		fd = open_link(pid, path, name, crc);
		if (fd >= 0) {
			*how = DEBUG_LINK;
			return fd;
		}
	}
	return -1;
}
