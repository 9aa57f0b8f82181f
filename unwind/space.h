#ifndef CPROF_SPACE_H
#define CPROF_SPACE_H
/*
 * space — a target process's address space as the unwinder and the
 * symbolizer see it from outside: which object (executable, library, vDSO)
 * covers an address, where the object was loaded (its bias), the object's
 * file bytes at an address, and the function symbol there.
 *
 * Invariants:
 *  - objects are opened once per run and cached by (device, inode, path);
 *    a struct space_obj pointer stays valid until space_free();
 *  - binaries are opened through /proc/PID/map_files/START-END first (the
 *    exact file mapped, even when deleted or replaced), then
 *    /proc/PID/root/PATH (processes in containers), then PATH; a file whose
 *    inode differs from the mapped one is not used, because its symbols
 *    would be wrong;
 *  - memory is read from the object's file image, never from the live
 *    target: code and unwind tables are read-only, and reading the file is
 *    far cheaper than reading the process;
 *  - the maps are re-read when an address falls outside every known object,
 *    at most once per SPACE_REFRESH_NS, so an unknown address cannot make
 *    every lookup re-read /proc;
 *  - objects without .eh_frame_hdr get a search table over their bare
 *    .eh_frame or their .debug_frame (unwind/cfitab), built once per file
 *    on first need and kept; it is read by libunwind at a synthetic address
 *    at or above SPACE_CFI_WINDOW, in the kernel half of x86_64, which no
 *    target memory can occupy: space_read() answers those addresses from
 *    the tables, each file's in its own 4 GiB slot;
 *  - symbols come from a separate debug file when one is found (build ID,
 *    then .gnu_debuglink: unwind/debugfind.h), else the object's own
 *    .symtab or .dynsym, then its MiniDebugInfo (decompressed on the
 *    first address none of those names);
 *  - not thread-safe: one thread uses a space.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SPACE_REFRESH_NS 50000000ull /* 50 ms */
#define SPACE_CFI_WINDOW 0xffff800000000000ull

struct elf_image;

struct space_obj {
	char *path;             /* as /proc/PID/maps names it */
	uint64_t dev, inode;
	int is_vdso;
	int is_main;            /* the process's executable */
	struct elf_image *img;  /* NULL when the object could not be read */
	struct elf_image *syms; /* image whose symbols to use (img or a debug file) */
	uint64_t bias;          /* runtime address = ELF virtual address + bias */
	uint64_t text_start, text_end, text_offset; /* its first executable mapping */
	const char *build_id;   /* "" when unknown */
	uint64_t base;          /* start - offset of its lowest mapping: names the load */
	size_t index;           /* 0, 1, 2...: order of discovery */
	/* .eh_frame_hdr, as runtime addresses; eh_count 0 when absent. */
	uint64_t eh_hdr, eh_table, eh_count;
	size_t image_index;     /* which file (the slot of its CFI tables) */
	int go_cfi;             /* .debug_frame in use: 1 a Go binary, -1 not Go, 0 unknown */
};

/* Which CFI a search table was built from (enum cfitab_kind's values). */
#define SPACE_CFI_EH_FRAME 0
#define SPACE_CFI_DEBUG_FRAME 1

/*
 * A search table for libunwind's UNW_INFO_FORMAT_IP_OFFSET remote format:
 * int32 pairs (start - start_ip, FDE address - segbase) at table.
 */
struct space_cfi {
	uint64_t start_ip, end_ip; /* runtime addresses the table covers */
	uint64_t segbase;          /* FDE offsets are relative to this */
	uint64_t table;            /* where the table is read (synthetic) */
	uint64_t table_len;        /* entries */
	uint64_t load_offset;      /* what the FDEs' absolute addresses need added */
};

struct space;

/*
 * A space for process pid with its maps read once. NULL with errno on
 * failure. A space is a heap object (its layout is private): space_new()
 * and space_free() are a deliberate pair.
 */
struct space *space_new(pid_t pid);

/* Free a space from space_new(), its objects and their images; NULL is fine. */
void space_free(struct space *s);

/* Re-read /proc/PID/maps now. 0 or -1. */
int space_refresh(struct space *s);

/* The object whose mappings cover addr, or NULL (may refresh, rate-limited). */
struct space_obj *space_find(struct space *s, uint64_t addr);

/*
 * The search table of kind SPACE_CFI_* for obj, built on first use. 0, or
 * -1 when obj's file has no such CFI (remembered: not tried again).
 */
int space_cfi(struct space *s, struct space_obj *obj, int kind, struct space_cfi *out);

/*
 * Copy n bytes of object memory at runtime address addr, or of a CFI table
 * at its synthetic address. 0 or -1.
 */
int space_read(struct space *s, uint64_t addr, void *out, size_t n);

/*
 * The function containing runtime address addr in obj: its name, with
 * *start set to its runtime address. NULL when unknown.
 */
const char *space_symbol(struct space *s, struct space_obj *obj, uint64_t addr, uint64_t *start);

/*
 * A new read-only fd of obj's file, opened as its image was (map_files,
 * the target's root, the host, the inode checked); -1 for the vDSO or
 * when it cannot be. The caller closes it.
 */
int space_open_obj(struct space *s, const struct space_obj *obj);

/* The main executable's object, or NULL when it has no mapping yet. */
struct space_obj *space_main(struct space *s);

/* All objects seen so far, in discovery order. */
struct space_obj *const *space_objects(struct space *s, size_t *n);

#endif
