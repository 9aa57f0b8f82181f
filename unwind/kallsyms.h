#ifndef CPROF_KALLSYMS_H
#define CPROF_KALLSYMS_H
/*
 * kallsyms — the running kernel's function names, from /proc/kallsyms,
 * for the kernel part of a perf sample's call chain: an address to the
 * name of the kernel (or module) function that contains it.
 *
 * Invariants:
 *  - read once per run (kallsyms_get), lazily: only a capture that has
 *    kernel addresses to name pays for it;
 *  - only code symbols (t, T, w, W), sorted; the file is the kernel's, but
 *    still read with bounds: lines past KALLSYMS_LINE are skipped, at most
 *    KALLSYMS_MAX symbols and KALLSYMS_TEXT bytes of names;
 *  - where the kernel hides its addresses (kptr_restrict, no CAP_SYSLOG:
 *    every address 0) there is no table: NULL, errno EPERM.
 */
#include <stdint.h>

#define KALLSYMS_LINE 512
#define KALLSYMS_MAX (4u << 20)
#define KALLSYMS_TEXT (128u << 20)
#define KALLSYMS_PROBE 64

struct kallsyms;

/*
 * The run's table, read on first use (once, whichever thread asks first);
 * NULL with errno (EPERM: addresses hidden).
 */
const struct kallsyms *kallsyms_get(void);

/*
 * Whether the kernel shows this user its addresses: the first
 * KALLSYMS_PROBE lines of /proc/kallsyms only, so that a capture can
 * decide on kernel call chains before its window opens and read the
 * whole table (tens of ms of CPU) while it samples. 1, or 0 with errno
 * (EPERM: addresses hidden).
 */
int kallsyms_readable(void);

/* The name of the function containing addr, or NULL (not in the kernel's text). */
const char *kallsyms_name(const struct kallsyms *k, uint64_t addr);

#endif
