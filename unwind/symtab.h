#ifndef CPROF_SYMTAB_H
#define CPROF_SYMTAB_H
/*
 * symtab — the function symbols of one ELF file, as a table sorted by
 * address that answers "which function holds this address". Built through
 * libelf from the file's .symtab, or its .dynsym when .symtab has no
 * function; unwind/elfimg.c owns one per image and builds it on the first
 * lookup.
 *
 * Invariants:
 *  - the symbol table is untrusted: a name must end in a NUL inside its
 *    string table, an address plus size must not wrap, at most
 *    SYMTAB_MAX_SYMBOLS symbols are kept, and a lookup walks back over at
 *    most SYMTAB_WALK entries, so a hostile file can cause neither a crash
 *    nor a linear lookup;
 *  - defined STT_FUNC and STT_GNU_IFUNC symbols at a nonzero address
 *    count, and STT_NOTYPE ones that label code (in an executable section,
 *    not a "$" mapping symbol or a ".L" label: hand-written assembly); the
 *    aliases at one address are one entry, named by the preferred one (a
 *    typed symbol; then global, then weak, then local; then fewer leading
 *    underscores; then the shorter; then bytewise) and as wide as the
 *    widest of them;
 *  - a symbol of size 0 reaches to the next symbol's start, and no further
 *    than the end of its section, and is found only when no sized symbol
 *    contains the address and it is the nearest start below it; a sized
 *    symbol never names an address past its end;
 *  - names are cut at the first '@' ("f@@GLIBC_2.2.5" is "f"), as long as
 *    the cut copies fit in SYMTAB_MAX_COPIES bytes; they point into the ELF
 *    file's string table or into the table's own copies, and stay valid
 *    while both the table and the ELF data live; a name longer than
 *    SYMTAB_MAX_NAME bytes is not a function's, and its symbol is skipped;
 *  - a table is built once and read-only afterwards: symtab_find() may run
 *    on many threads at once, symtab_load() on one (the image serialises
 *    it under its libelf lock);
 *  - memory running out while building leaves the table empty, never half
 *    built.
 */
#include <stddef.h>
#include <stdint.h>

#define SYMTAB_MAX_SYMBOLS (1u << 22) /* 4M functions: several times the largest real program */
#define SYMTAB_WALK 64                /* entries a lookup walks back for an enclosing symbol */
#define SYMTAB_MAX_NAME 16384         /* bytes of a name; longer ones (no real name is) are skipped */
#define SYMTAB_MAX_COPIES (64u << 20) /* bytes of names cut at '@'; past it they keep "@VERSION" */

struct Elf; /* libelf's Elf */
struct symtab_sym;

struct symtab {
	uint64_t *starts;        /* n distinct start addresses, ascending (dense, for the search) */
	struct symtab_sym *syms; /* the details of starts[i], same index */
	char *names;             /* one block of the names cut at '@', or NULL */
	size_t n;
	int capped; /* the file had more than SYMTAB_MAX_SYMBOLS function symbols */
};

/* Start an empty table. */
void symtab_init(struct symtab *t);

/* Free what the table holds; it is empty again and may be loaded anew. */
void symtab_release(struct symtab *t);

/*
 * Fill an empty table with elf's function symbols: .symtab, else .dynsym.
 * A file without either, or memory running out, leaves it empty.
 */
void symtab_load(struct symtab *t, struct Elf *elf);

/*
 * The function containing vaddr: the innermost sized symbol whose
 * [start, start+size) holds it, else the nearest size-0 symbol below it,
 * before the next symbol and within its section. Its name, with *start (may be NULL) set to its
 * address; NULL when no symbol contains vaddr.
 */
const char *symtab_find(const struct symtab *t, uint64_t vaddr, uint64_t *start);

#endif
