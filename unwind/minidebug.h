#ifndef CPROF_MINIDEBUG_H
#define CPROF_MINIDEBUG_H
/*
 * minidebug — MiniDebugInfo: the xz-compressed ELF file that Fedora and
 * others put in a stripped object's .gnu_debugdata section, holding the
 * .symtab of the functions .dynsym lacks (static functions, mostly). It
 * names code that would otherwise have no name; it has no line tables.
 *
 * Invariants:
 *  - the section is untrusted: it is decompressed with liblzma under a
 *    memory limit, into at most MINIDEBUG_MAX_OUT bytes, and the result is
 *    an ordinary untrusted ELF image (unwind/elfimg.h checks it);
 *  - the images minidebug_open() returns hold at most MINIDEBUG_MAX_TOTAL
 *    bytes between them at any time (a bomb spread over many objects);
 *    an object past either cap gets none, with a note naming it and the
 *    cap (the cap across objects is noted once);
 *  - the image returned is the caller's, freed with elf_image_free().
 */
#include <stddef.h>

/*
 * Bytes of one decompressed file: it holds only .symtab and .strtab of the
 * functions .dynsym lacks, a few MiB for the largest libraries shipped.
 */
#define MINIDEBUG_MAX_OUT (64u << 20)
/* Bytes of all the decompressed files of the process at once. */
#define MINIDEBUG_MAX_TOTAL (256u << 20)

struct elf_image;

/* Decompress an xz stream xz[0..len) into a new ELF image; NULL when it is not one. */
struct elf_image *minidebug_decode(const unsigned char *xz, size_t len);

/*
 * img's MiniDebugInfo as an image of its own, charged to the total, or
 * NULL when it has none or a cap is hit (then noted).
 */
struct elf_image *minidebug_open(const struct elf_image *img);

#endif
