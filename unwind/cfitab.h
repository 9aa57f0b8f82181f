#ifndef CPROF_CFITAB_H
#define CPROF_CFITAB_H
/*
 * cfitab — a search table over an object's DWARF call frame information
 * when the linker left no .eh_frame_hdr to search: `gcc -static` binaries
 * keep a bare .eh_frame, Go binaries keep theirs in .debug_frame (often
 * SHF_COMPRESSED). The table has the shape of .eh_frame_hdr's: sorted
 * (initial location, FDE offset) pairs of int32, which libunwind's remote
 * search (UNW_INFO_FORMAT_IP_OFFSET) reads through the address-space
 * accessors.
 *
 * libunwind's remote API reads only .eh_frame-format records (it parses
 * .debug_frame's CIE ids and CIE offsets only for its own local address
 * space, from local memory), so .debug_frame is converted record by record
 * into .eh_frame form: CIE id 0, version 3, augmentation "" (so FDE
 * addresses are absolute 8-byte values, relocated by the load bias through
 * the dyn-info's load_offset), FDE CIE pointers made relative; the CFA
 * instructions are copied unchanged.
 *
 * Invariants:
 *  - the section bytes are untrusted: every length, offset and LEB128 is
 *    bounds-checked against its record; a malformed record or one whose CIE
 *    cannot be read is skipped, never followed outside the section;
 *  - everything is capped: CFITAB_MAX_SECTION bytes in (after
 *    decompression), CFITAB_MAX_FDES entries, and the converted copy no
 *    larger than CFITAB_MAX_SECTION; past a cap the table keeps what it has;
 *  - all tables of the process together hold at most CFITAB_MAX_TOTAL
 *    bytes (entries and converted frames, and a section's inflated bytes
 *    while its table is built), whatever the number of objects: a table
 *    that would pass it is not built (one note), its object's frames stay
 *    partial;
 *  - a build reads each byte of its section a bounded number of times:
 *    every record moves the pass forward;
 *  - ent[] is sorted by start, strictly increasing, every start - base and
 *    every FDE offset fits in an int32; FDEs of zero length are left out;
 *  - base and end are ELF virtual addresses (not biased by a load).
 */
#include <stddef.h>
#include <stdint.h>

#define CFITAB_MAX_SECTION (256u << 20) /* bytes of one section, decompressed */
#define CFITAB_MAX_FDES (1u << 22)      /* 4M functions */
#define CFITAB_MAX_CIES 65536           /* distinct CIEs per section */
#define CFITAB_MAX_TOTAL (512u << 20)   /* bytes all tables hold together */

struct elf_image;

/* One entry, laid out as libunwind's struct table_entry. */
struct cfitab_entry {
	int32_t start; /* initial location - base */
	int32_t fde;   /* offset of the FDE in the frame bytes */
};

enum cfitab_kind {
	CFITAB_EH_FRAME,    /* FDE offsets into the object's own .eh_frame */
	CFITAB_DEBUG_FRAME, /* FDE offsets into frame[], converted .debug_frame */
};

struct cfitab {
	enum cfitab_kind kind;
	struct cfitab_entry *ent;
	size_t n;
	uint64_t base;        /* ELF vaddr the starts are relative to (the lowest start) */
	uint64_t end;         /* ELF vaddr just past the highest FDE's end */
	uint64_t frame_vaddr; /* CFITAB_EH_FRAME: the ELF vaddr of .eh_frame */
	unsigned char *frame; /* CFITAB_DEBUG_FRAME: the converted records (owned) */
	size_t frame_len;
	size_t skipped;       /* records skipped as malformed or unsupported */
	size_t held;          /* bytes counted against CFITAB_MAX_TOTAL */
};

/* An empty table. */
void cfitab_init(struct cfitab *t);

/* Free what the table holds; it is empty again. */
void cfitab_release(struct cfitab *t);

/*
 * Build from the bytes of an .eh_frame section loaded at ELF vaddr vaddr
 * (pc-relative pointers are resolved against it). 0 when at least one FDE
 * was found, -1 otherwise (the table is then empty).
 */
int cfitab_build_eh_frame(struct cfitab *t, const unsigned char *sec, size_t len, uint64_t vaddr);

/*
 * Build from the bytes of a .debug_frame section (32- and 64-bit DWARF
 * records, CIE versions 1, 3 and 4, augmentation ""), converting it.
 * 0 when at least one FDE was found, -1 otherwise.
 */
int cfitab_build_debug_frame(struct cfitab *t, const unsigned char *sec, size_t len);

/*
 * Build from img's .eh_frame (kind CFITAB_EH_FRAME) or .debug_frame
 * (CFITAB_DEBUG_FRAME, decompressed when SHF_COMPRESSED with zlib).
 * 0 or -1 (no such section, nothing usable in it, or out of memory).
 */
int cfitab_load(struct cfitab *t, const struct elf_image *img, enum cfitab_kind kind);

/* Bytes all tables hold now (counted against CFITAB_MAX_TOTAL). */
size_t cfitab_held(void);

/* Lower the total cap (tests); 0 restores CFITAB_MAX_TOTAL. */
void cfitab_limit_total(size_t bytes);

/* The index of the entry whose range may hold ELF vaddr addr, or -1. */
long cfitab_find(const struct cfitab *t, uint64_t addr);

#endif
