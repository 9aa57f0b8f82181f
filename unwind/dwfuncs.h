#ifndef CPROF_DWFUNCS_H
#define CPROF_DWFUNCS_H
/*
 * dwfuncs — the out-of-line functions of a DWARF file by address: for a
 * compile unit, a table of its DW_TAG_subprogram DIEs' address ranges,
 * built once on the unit's first lookup, so that finding the function
 * around an address is a binary search instead of a walk of the unit's
 * whole DIE tree (a C++ unit holds tens of thousands of DIEs of types and
 * declarations; libdw's dwarf_getscopes() walks them all on every call).
 *
 * Invariants:
 *  - the DWARF is untrusted: a unit's walk visits at most DWFUNCS_MAX_DIES
 *    DIEs and nests at most DWFUNCS_MAX_DEPTH deep, at most
 *    DWFUNCS_MAX_RANGES ranges are kept per unit and DWFUNCS_MAX_TOTAL
 *    across the units of a file (tables are built for the units that
 *    sampled addresses fall in, which a hostile file can make many); past
 *    a cap the table keeps what it has;
 *  - functions are found at the unit's top level and inside namespaces,
 *    classes, structures, unions and modules (where C++ and Fortran
 *    define them), not inside other functions (a caller falls back to
 *    libdw's own search there);
 *  - a unit's table is sorted by start; ranges that overlap are kept and
 *    the innermost (the last start at or below an address whose range
 *    holds it) wins;
 *  - a dwfuncs does not own the Dwarf handle; it must not outlive it.
 */
#include <elfutils/libdw.h>
#include <stdint.h>

#define DWFUNCS_MAX_DIES (16u << 20)   /* DIEs visited in one unit */
#define DWFUNCS_MAX_DEPTH 64           /* nesting of namespaces and classes */
#define DWFUNCS_MAX_RANGES (4u << 20)  /* function ranges of one unit */
#define DWFUNCS_MAX_TOTAL (16u << 20)  /* function ranges of all the units of one file */

struct dwfuncs;

/* An index over dw; NULL when out of memory. dwfuncs_new() and dwfuncs_free() are a pair. */
struct dwfuncs *dwfuncs_new(Dwarf *dw);

/* Free the index (not the Dwarf); NULL is fine. */
void dwfuncs_free(struct dwfuncs *f);

/*
 * The DW_TAG_subprogram DIE of unit cu whose ranges hold vaddr, in *fn.
 * 0, or -1 when the unit's table has none.
 */
int dwfuncs_find(struct dwfuncs *f, Dwarf_Die *cu, uint64_t vaddr, Dwarf_Die *fn);

#endif
