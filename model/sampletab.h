#ifndef CPROF_SAMPLETAB_H
#define CPROF_SAMPLETAB_H
/*
 * sampletab — the sample table of a profile, which merges equal samples;
 * private to model/ (profile.c validates and interns, then adds here).
 *
 * Invariants:
 *  - v[0..n) are the distinct samples in the order of their first add; a
 *    sample is its location ids (leaf first) and its label set, and adding
 *    one equal to a stored sample adds the values to it element-wise
 *    (wrapping, never undefined behaviour) instead of storing another;
 *  - label order never matters: a stored sample's labels are in the
 *    canonical order (by key, str, num, num_unit as string indices and
 *    numbers), so equal sets are equal byte for byte;
 *  - each sample's values, location ids and labels live in one block of
 *    the arena given to sampletab_init(), which never moves, so v can be
 *    reallocated without fixing up pointers;
 *  - at most PROFILE_MAX_SAMPLES samples; an add that cannot store a new
 *    sample fails (-1) and leaves v[0..n) as they were.
 */
#include <stddef.h>
#include <stdint.h>

#include "model/arena.h"
#include "model/hash.h"
#include "model/profile.h"

struct sampletab {
	struct profile_sample *v;
	size_t n, cap;
	struct hash index; /* over v, by the hash of ids and labels */
	struct arena *data; /* the caller's, where the samples' parts live */
};

/* Start an empty table whose samples' parts are allocated from data. */
void sampletab_init(struct sampletab *t, struct arena *data);

/* Free the table's own memory (not the arena's); it is empty again. */
void sampletab_release(struct sampletab *t);

/*
 * Add a sample of nloc location ids, nlabels labels and nvalues values
 * (the caller checked them: ids known, nloc <= PROFILE_MAX_STACK, nlabels
 * <= PROFILE_MAX_LABELS, label strings interned). labels is sorted into
 * the canonical order in place. Merges with an equal stored sample, which
 * cannot fail; 0, or -1 when a new sample could not be stored (the cap,
 * or memory).
 */
int sampletab_add(struct sampletab *t, const uint64_t *ids, size_t nloc,
		  struct profile_label *labels, size_t nlabels, const int64_t *values,
		  size_t nvalues);

#endif
