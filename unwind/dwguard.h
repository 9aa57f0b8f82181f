#ifndef CPROF_DWGUARD_H
#define CPROF_DWGUARD_H
/*
 * dwguard — the bounds put on libdw before it reads a file (unwind/dwlines.c
 * is its one user).
 *
 * Invariants:
 *  - libdw inflates compressed DWARF sections (SHF_COMPRESSED, .zdebug) in
 *    full when a file is opened, into buffers of the sizes they declare
 *    (libelf refuses a declared ratio above 1032:1): so the declared sizes
 *    are what it will hold, and they are charged before it starts: a file
 *    declaring more than DWGUARD_MAX_INFLATE bytes, or that would take the
 *    charges held past DWGUARD_MAX_INFLATE_TOTAL, is refused (a note names
 *    it and the cap; the total's note is said once);
 *  - every charge is released exactly once (dwguard_release()) when its
 *    file is closed;
 *  - the stand-in is a valid ELF file with an empty line table and no
 *    DWARF, built once, never written after.
 */
#include <stddef.h>
#include <stdint.h>

#define DWGUARD_MAX_INFLATE (512ull << 20)
#define DWGUARD_MAX_INFLATE_TOTAL (1ull << 30)

/*
 * The bytes libdw would inflate for the ELF file data[0..size): the sizes
 * its SHF_COMPRESSED and .zdebug sections declare, summed (saturating);
 * 0 when libelf would not be given the file (unwind/elfimg.h).
 */
uint64_t dwguard_inflated_size(const void *data, size_t size);

/*
 * Charge what libdw will inflate of data[0..size) (name: the file, for
 * notes) to the budgets: 0 with *charged set (release it later), or -1
 * noted, with nothing charged: the file gets no lines.
 */
int dwguard_charge(const void *data, size_t size, const char *name, uint64_t *charged);

/* Give back a charge of dwguard_charge(). */
void dwguard_release(uint64_t charged);

/* The empty alt file (len bytes): set as libdw's alt, it stops libdw looking for one. */
const void *dwguard_standin(size_t *len);

#endif
