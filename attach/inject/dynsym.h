#ifndef CPROF_DYNSYM_H
#define CPROF_DYNSYM_H
/*
 * dynsym — a defined dynamic symbol of an ELF object by name, as the
 * dynamic loader would bind a reference to it: the default version
 * (NAME@@VER) over hidden ones (NAME@VER). Invariant: the file is the
 * target's, untrusted; it is read through unwind/elfimg.c (bounds-checked
 * sections), every index checked against its table.
 */
#include <stdint.h>

/*
 * The value (st_value, relative to the object's load base) of the
 * defined function or object symbol name in the ELF file open on fd.
 * 0, or -1 when the file is unreadable or has no such symbol.
 */
int dynsym_lookup(int fd, const char *name, uint64_t *value);

#endif
