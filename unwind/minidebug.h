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
 *  - the image returned is the caller's, freed with elf_image_free().
 */
#include <stddef.h>

#define MINIDEBUG_MAX_OUT (256u << 20) /* bytes of the decompressed file */

struct elf_image;

/* Decompress an xz stream xz[0..len) into a new ELF image; NULL when it is not one. */
struct elf_image *minidebug_decode(const unsigned char *xz, size_t len);

/* img's MiniDebugInfo as an image of its own, or NULL when it has none. */
struct elf_image *minidebug_open(const struct elf_image *img);

#endif
