#ifndef CPROF_ELFIMG_H
#define CPROF_ELFIMG_H
/*
 * elfimg — an ELF object as cprof needs it: its loadable segments, its
 * GNU build ID, where its .eh_frame_hdr is, the bytes of its file at a
 * virtual address, and its function symbols.
 *
 * Invariants:
 *  - the file is untrusted: every offset, size, count and string read from
 *    it is checked against the image's length before use; a malformed file
 *    gives NULL from elf_image_open*() or missing data, never a crash;
 *  - the image is read-only and private to the caller (a private mapping of
 *    the file, or a copy of memory), so a file replaced on disk later does
 *    not change an open image; a file truncated in place while mapped
 *    cannot crash cprof (common/filefault.h: the read sees zeros), and the
 *    image is then damaged: one note names it, and from then on it gives
 *    no symbols, no sections and no bytes;
 *  - libelf is given the file only when it has at most ELF_MAX_SECTIONS
 *    section headers and an uncompressed section name table (libelf
 *    allocates per section, and inflates a compressed string table to the
 *    size its header claims); otherwise the image has no sections;
 *  - only 64-bit little-endian ELF is accepted (x86_64);
 *  - function symbols come from .symtab, else .dynsym, and are loaded
 *    once, on the first lookup, into a table (unwind/symtab.h) whose rules
 *    decide which symbol an address belongs to;
 *  - an image is a heap object: elf_image_open() or elf_image_from_mem()
 *    makes it and elf_image_free() is the only way to end it, a deliberate
 *    pair like _new/_free (nothing else owns an image's memory).
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_MAX_SECTIONS 65536 /* section headers handed to libelf */

struct elf_image;

/* A PT_LOAD segment. */
struct elf_segment {
	uint64_t vaddr, memsz;
	uint64_t offset, filesz;
	uint32_t flags; /* PF_R | PF_W | PF_X */
};

/* Map the file open on fd (the caller keeps and closes fd). NULL on failure. */
struct elf_image *elf_image_open(int fd);

/* Copy len bytes of an ELF image held in memory (e.g. the vDSO). NULL on failure. */
struct elf_image *elf_image_from_mem(const void *data, size_t len);

/* Like elf_image_from_mem(), taking the malloc'd data (freed on failure too). */
struct elf_image *elf_image_adopt(void *data, size_t len);

/*
 * Whether libelf may be given the ELF file data[0..size): at most
 * ELF_MAX_SECTIONS section headers, inside the data, and a section name
 * table that is not SHF_COMPRESSED. 1 yes, 0 no.
 */
int elf_image_libelf_ok(const void *data, size_t size);

/* Charge bytes to the budget pool: they are given back when img is freed. */
void elf_image_charge(struct elf_image *img, _Atomic size_t *pool, size_t bytes);

/* The name messages give img (control characters replaced): its file's path, or "". */
const char *elf_image_name(const struct elf_image *img);

/* Name an image made from memory, for messages. */
void elf_image_set_name(struct elf_image *img, const char *name);

/* 1 when a read found img's file truncated under it (noted once), else 0. */
int elf_image_damaged(const struct elf_image *img);

/* Free an image from elf_image_open() or elf_image_from_mem() and all it holds; NULL is fine. */
void elf_image_free(struct elf_image *img);

/* The image's length in bytes. */
size_t elf_image_size(const struct elf_image *img);

/* e_type: ET_EXEC, ET_DYN, ... */
int elf_image_type(const struct elf_image *img);

/* The GNU build ID as lowercase hex, or "" when the file has none. */
const char *elf_image_build_id(const struct elf_image *img);

/* The PT_LOAD segments, in program-header order. */
const struct elf_segment *elf_image_segments(const struct elf_image *img, size_t *n);

/* Where PT_GNU_EH_FRAME (.eh_frame_hdr) is. 0, or -1 when absent. */
int elf_image_eh_frame_hdr(const struct elf_image *img, uint64_t *vaddr, uint64_t *size);

/*
 * The raw file bytes of the first section named name (".eh_frame",
 * ".debug_frame"): *data and *size inside the image, *vaddr its sh_addr (0
 * for a section not loaded), *compressed 1 when SHF_COMPRESSED (the bytes
 * then start with an Elf64_Chdr). 0, or -1 when there is no such section,
 * it has no file bytes (SHT_NOBITS) or they lie outside the image.
 */
int elf_image_section(const struct elf_image *img, const char *name, const unsigned char **data,
		      size_t *size, uint64_t *vaddr, int *compressed);

/*
 * A pointer to the file bytes that a PT_LOAD segment places at virtual
 * addresses [vaddr, vaddr+n), or NULL when that range is not wholly inside
 * one segment's file-backed part.
 */
const void *elf_image_ptr(const struct elf_image *img, uint64_t vaddr, size_t n);

/*
 * The function symbol containing vaddr (by symtab_find()'s rules): its
 * name (valid while img lives), with *start (may be NULL) set to its
 * address. NULL when no symbol contains vaddr. Loads the symbols first.
 */
const char *elf_image_symbol(struct elf_image *img, uint64_t vaddr, uint64_t *start);

/* How many function symbols the image has (loads them). */
size_t elf_image_nsymbols(struct elf_image *img);

#endif
