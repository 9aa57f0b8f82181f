#ifndef CPROF_ARRAY_H
#define CPROF_ARRAY_H
/*
 * array — capped geometric growth for heap arrays of fixed-size elements:
 * the one helper behind every table that grows an element at a time (the
 * profile's tables, the address space's objects, an ELF image's symbols).
 *
 * Invariants:
 *  - the capacity starts at ARRAY_MIN_CAP and doubles, so n appends one at
 *    a time cost O(n) element copies in all, never O(n^2);
 *  - the capacity never passes the caller's max, and a request past max
 *    fails: the cap is hard, whatever the input asks for;
 *  - a failed grow changes nothing: the array and its capacity stay as
 *    they were, still valid and still the caller's to free.
 */
#include <stddef.h>

#define ARRAY_MIN_CAP 16 /* elements of a first allocation */

/*
 * Make arr, an array of *cap elements of size bytes, hold at least need
 * elements, doubling it but never past max elements. Returns the array,
 * perhaps moved (*cap updated), or NULL (errno EFBIG past max, ENOMEM)
 * with arr and *cap unchanged. arr may be NULL with *cap 0.
 */
void *array_grow(void *arr, size_t *cap, size_t need, size_t size, size_t max);

#endif
