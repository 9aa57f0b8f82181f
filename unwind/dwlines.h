#ifndef CPROF_DWLINES_H
#define CPROF_DWLINES_H
/*
 * dwlines — source lines and inlined frames of one ELF file's DWARF, read
 * with elfutils' libdw: for an address (an ELF virtual address, i.e. a
 * runtime address minus the load bias), the chain of frames that the
 * compiler folded into it, innermost first — an always_inline helper, the
 * function it was inlined into, and so on out to the real (out-of-line)
 * function — each with its function's name, declaration file and line,
 * and the line executing in that frame.
 *
 * Invariants:
 *  - the file is untrusted: libdw checks what it parses, and every answer
 *    here is bounded (at most DWLINES_MAX_FRAMES frames, strings from
 *    libdw's own tables or the file name pool, never longer than
 *    DWLINES_MAX_NAME); a malformed file gives no frames, never a crash;
 *  - a dwlines owns its file descriptor, its Elf and its Dwarf handles
 *    and the pool; the strings it returns live as long as it does;
 *  - dwlines_open() fails (NULL) for a file without .debug_info or
 *    without a line table: it could give no lines;
 *  - an address is looked up in libdw once: its chain is kept (at most
 *    a million addresses), so later lookups, in later captures too, are
 *    a hash probe;
 *  - what dwlines_lookup() answers is kept across runs, per build ID, by
 *    the line cache (unwind/linecache.h): a change that makes it answer
 *    differently for the same DWARF must bump LINETAB_VERSION
 *    (unwind/linetab.h), or older runs' answers keep being served;
 *  - not thread-safe: one thread uses a dwlines.
 */
#include <stddef.h>
#include <stdint.h>

#define DWLINES_MAX_FRAMES 32 /* inlined frames kept for one address */
#define DWLINES_MAX_NAME 4096 /* bytes of a file path */

/* One frame of an address's inline chain. */
struct dwlines_frame {
	const char *name;   /* the linkage (mangled) name when there is one, else the plain name */
	const char *file;   /* the function's declaration file, absolute when known; "" unknown */
	int64_t start_line; /* the function's declaration line, 0 unknown */
	int64_t line;       /* the line executing in this frame (a call's line in callers), 0 unknown */
};

struct dwlines;

/*
 * Take fd (it is closed when the dwlines is freed, or at once on
 * failure) and read its DWARF. NULL when the file has no usable DWARF.
 * dwlines_open() and dwlines_free() are a deliberate pair.
 */
struct dwlines *dwlines_open(int fd);

/* Read DWARF from an ELF file held in memory (for tests and fuzzing; not copied). */
struct dwlines *dwlines_open_mem(const void *data, size_t len);

/* Free a dwlines and close its file; NULL is fine. */
void dwlines_free(struct dwlines *d);

struct stat;

/*
 * The file d reads: fstat() of its descriptor, taken at dwlines_open(),
 * into *st, and its GNU build ID as lowercase hex into hex[cap]. 0, or -1
 * when d reads memory or the file has no build ID (or it does not fit).
 * For the line cache's trust in what d answers (unwind/linecache.h).
 */
int dwlines_file(const struct dwlines *d, struct stat *st, char *hex, size_t cap);

/*
 * The inline chain at ELF virtual address vaddr into out[0..max),
 * innermost first, the out-of-line function last. Returns the number of
 * frames, 0 when the DWARF does not cover vaddr.
 */
size_t dwlines_lookup(struct dwlines *d, uint64_t vaddr, struct dwlines_frame *out, size_t max);

#endif
