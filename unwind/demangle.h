#ifndef CPROF_DEMANGLE_H
#define CPROF_DEMANGLE_H
/*
 * demangle — C++ symbol names as people read them.
 *
 * Invariants:
 *  - only names with the Itanium C++ ABI prefix "_Z" and at most
 *    DEMANGLE_MAX_IN bytes are handed to the demangler (the names come from
 *    untrusted ELF files, and demanglers have a history of blowing up on
 *    crafted input); anything else is returned as it is;
 *  - the result is written into the caller's buffer, truncated to fit.
 */
#include <stddef.h>

#define DEMANGLE_MAX_IN 4096

/*
 * The readable form of name in out (cap bytes); returns out, or name
 * itself when name is not a mangled C++ name or does not demangle.
 */
const char *demangle(const char *name, char *out, size_t cap);

#endif
