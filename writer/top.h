#ifndef CPROF_TOP_H
#define CPROF_TOP_H
/*
 * top — the functions that cost the most, as `go tool pprof -top` lists
 * them: flat (the function itself), flat%, sum%, cum (with its callees),
 * cum%, name; for the summary cprof-attach prints after a capture.
 *
 * Invariants:
 *  - a function counts once per sample in cum however often it recurses;
 *  - names are printed with their control bytes escaped (common/sanitize.h),
 *    C++ names without their parameter lists (top_short_name): the
 *    profile keeps them whole;
 *  - values print in their unit: nanoseconds as ms or s, bytes as kB, MB
 *    or GB, counts as they are.
 */
#include <stddef.h>

#include "common/buf.h"

struct profile;

/* The n functions with the largest flat value of sample type `value`. 0 or -1. */
int top_write(const struct profile *p, size_t value, size_t n, struct buf *out);

/*
 * name without the parameter list (and member qualifiers) that ends a
 * demangled C++ name, in out (cap bytes), as perf's views show them:
 * "ns::f(int, char const*) const" is "ns::f"; anything else, or a name
 * longer than cap, is returned as it is.
 */
const char *top_short_name(const char *name, char *out, size_t cap);

/* The index of the profile's default sample type (default_sample_type, else the last). */
size_t top_default_value(const struct profile *p);

#endif
