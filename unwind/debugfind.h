#ifndef CPROF_DEBUGFIND_H
#define CPROF_DEBUGFIND_H
/*
 * debugfind — where a stripped object's separate debug file lives, the
 * way distributions install them, looked for on this machine:
 *
 *   1. by GNU build ID: /usr/lib/debug/.build-id/xx/rest.debug (Debian's
 *      -dbgsym packages, Fedora's -debuginfo);
 *   2. by .gnu_debuglink: the name it holds, beside the object, in the
 *      object's directory's .debug/, and under /usr/lib/debug + the
 *      object's directory; a candidate counts only when its CRC-32 equals
 *      the one the link holds.
 *
 * Each path is tried inside the target's mount namespace first
 * (/proc/PID/root/PATH: a process in a container has its debug files in
 * its own image), then on the host. MiniDebugInfo and debuginfod are the
 * callers' later steps (unwind/minidebug.h, unwind/debuginfo.h).
 *
 * Invariants:
 *  - the object and every candidate are untrusted: the link's name must
 *    end in a NUL inside its section and hold no '/', a build ID must be
 *    hex of a sane length, a candidate must be a regular ELF file;
 *  - nothing is cached here and nothing is left open but the returned fd.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct elf_image;

/* How a debug file was found. */
enum debug_how {
	DEBUG_NONE,      /* not found */
	DEBUG_SELF,      /* the object's own sections */
	DEBUG_BUILD_ID,  /* /usr/lib/debug/.build-id/ */
	DEBUG_LINK,      /* .gnu_debuglink, CRC checked */
	DEBUG_MINI,      /* .gnu_debugdata (names only) */
	DEBUG_DEBUGINFOD /* a debuginfod server, or its cache */
};

/* A word for how ("build-id", "debuglink"...), for notes and tests. */
const char *debug_how_name(enum debug_how how);

/*
 * Open the separate debug file of the object img that process pid maps
 * from path (as /proc/PID/maps names it), with GNU build ID build_id (hex,
 * "" unknown): by build ID, then by debug link. Returns a read-only fd and
 * sets *how, or -1 (and DEBUG_NONE).
 */
int debugfind_open(pid_t pid, const char *path, const char *build_id,
		   const struct elf_image *img, enum debug_how *how);

/* The CRC-32 (zlib's, as .gnu_debuglink uses) of the whole file on fd. 0 or -1. */
int debugfind_crc(int fd, uint32_t *crc);

/*
 * The name and CRC a .gnu_debuglink section holds: sec[0..len) is the
 * section. 0, or -1 when it is malformed.
 */
int debugfind_parse_link(const unsigned char *sec, size_t len, const char **name,
			 uint32_t *crc);

#endif
