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
 *      the one the link holds;
 *   3. in the user's --debug-dir directories, on the host, by both.
 *
 * Each path is resolved inside the target's root with the target's
 * credentials (common/troot.h: a process in a container has its debug
 * files in its own image, and a path it names cannot lead out of it),
 * never on the host. MiniDebugInfo and debuginfod are the callers' later
 * steps (unwind/minidebug.h, unwind/debuginfo.h).
 *
 * Invariants:
 *  - the object and every candidate are untrusted: the link's name must
 *    end in a NUL inside its section and hold no '/', a build ID must be
 *    hex of a sane length, a candidate must be a regular ELF file;
 *  - a file found by build ID is used only when its own build ID is the
 *    object's; a debug link's candidate only when its CRC-32 is the one
 *    the link holds, computed only for a file of at most DEBUGFIND_CRC_MAX
 *    bytes that is not mostly holes (DEBUGFIND_SPARSE_MIN);
 *  - a candidate refused for its type, its owner's rights, its build ID,
 *    its size or its holes gets one note per file per run;
 *  - a CRC is kept by the file's identity (device, inode, size, mtime,
 *    ctime; at most 1024): a file is read once per run; nothing else is
 *    kept and nothing is left open but the returned fd.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * The largest file a debug link's CRC is computed over: far above any
 * debug file a distribution links (theirs are found by build ID first,
 * which needs no CRC), and a second or two of one core to read.
 */
#define DEBUGFIND_CRC_MAX (2ull << 30)
/* A file above this size whose allocated blocks are under 1/8 of it is sparse. */
#define DEBUGFIND_SPARSE_MIN (64ull << 20)

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

#define DEBUGFIND_DIRS_MAX 16 /* --debug-dir directories */

/*
 * Search dir too (--debug-dir), after the target's own places: by build
 * ID (DIR/.build-id/xx/rest.debug, DIR/NAME.debug, DIR/NAME, each only
 * with the object's build ID) and by debug link (DIR/LINK, CRC checked).
 * A host path the user chose, opened with cprof's own credentials. Call
 * before any capture; dir must outlive them. 0, or -1 when
 * DEBUGFIND_DIRS_MAX are already set.
 */
int debugfind_add_dir(const char *dir);

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

/*
 * The CRC-32 (zlib's, as .gnu_debuglink uses) of the whole file on fd. 0,
 * or -1 (EFBIG: refused by debugfind_crc_refusal()).
 */
int debugfind_crc(int fd, uint32_t *crc);

/* Why a file of stat st is too costly to compute a CRC over, or NULL. */
const char *debugfind_crc_refusal(const struct stat *st);

/*
 * The name and CRC a .gnu_debuglink section holds: sec[0..len) is the
 * section. 0, or -1 when it is malformed.
 */
int debugfind_parse_link(const unsigned char *sec, size_t len, const char **name,
			 uint32_t *crc);

#endif
