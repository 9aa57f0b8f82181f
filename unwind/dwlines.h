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
 *  - libdw inflates compressed DWARF sections (SHF_COMPRESSED, .zdebug)
 *    in full when a file is opened, into buffers of the sizes they
 *    declare: a file over the caps of unwind/dwguard.h is not opened
 *    (NULL, with a note naming it and the cap);
 *  - the file is a registered private mapping (common/filefault.h): if it
 *    is truncated while open, reads see zeros, and from then on lookups
 *    answer nothing (noted once);
 *  - libdw opens no file of its own accord: a .gnu_debugaltlink (dwz) is
 *    resolved only by build ID under /usr/lib/debug/.build-id, through the
 *    same caps, and checked against the build ID (else an empty stand-in
 *    is set, and names kept in the alt file are missing); a file with
 *    split DWARF (skeleton units naming .dwo files) or more than 256k
 *    units is not opened (NULL, noted);
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
#include <sys/types.h>

#define DWLINES_MAX_FRAMES 32 /* inlined frames kept for one address */
#define DWLINES_MAX_NAME 4096 /* bytes of a file path */
/*
 * Inflated bytes of one file's compressed DWARF: the debug information of
 * programs of a few million lines. Across the open files at once: twice
 * that, so that two such programs' files, or one and many small ones, fit.
 */
#define DWLINES_MAX_FILE (16ull << 30) /* bytes of a file mapped (mapping costs no memory) */

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
 * The dwz alt file it names, if any, is looked for by build ID inside
 * process pid's root with its credentials (pid <= 0: the host's, for
 * files cprof fetched itself). dwlines_open() and dwlines_free() are a
 * deliberate pair.
 */
struct dwlines *dwlines_open(int fd, pid_t pid);

/*
 * Read DWARF from an ELF file held in memory (for tests and fuzzing; not
 * copied, and written to: libelf rewrites the headers of the sections it
 * inflates). The same caps apply.
 */
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
