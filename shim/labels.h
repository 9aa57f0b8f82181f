#ifndef CPROF_SHIM_LABELS_H
#define CPROF_SHIM_LABELS_H
/*
 * labels — the program's own labels (include/cprof.h): each thread's
 * current label set, interned into the segment's set table, published in
 * a per-thread slot with a short history of changes, and named in the key
 * of every bucket the thread records (allocations, waits, threads).
 *
 * Invariants:
 *  - labels_tls is initial-exec TLS, all zero in a new thread (no labels,
 *    no slot); only its thread reads or writes it, except labels_current()
 *    which the shim's recording paths read on the same thread;
 *  - a set is interned once: its id never changes and its bytes in the
 *    segment never change after publication; a lookup of an existing set
 *    takes no lock (a private open-addressing index, like table.c's); only
 *    a set never seen before takes the interning lock, a leaf lock held
 *    for one 784-byte copy;
 *  - a slot is written only by its owner thread, under its sequence lock
 *    (segment.h); claiming one is a compare-and-swap on the segment's
 *    counters, never a lock; past the cap a thread publishes nothing (its
 *    buckets still carry its labels) and is counted once in lslots_full;
 *  - nothing here allocates or calls the allocator; every API call raises
 *    the shim's recursion guard, so a signal handler's malloc inside one
 *    goes straight to the real allocator. The API is not async-signal-
 *    safe: a handler must not change labels;
 *  - without an active shim (off, or not yet armed) the calls keep the
 *    push depth and nothing else: labels_current() stays 0.
 */
#include <stdarg.h>
#include <stdint.h>

#include "shim/shim.h"

#define LABELS_DEPTH 64 /* pushes remembered per thread; deeper ones are counted, not undone */


struct seg_lslot;

struct labels_thread {
	uint32_t cur;             /* the set in force (0: none) */
	uint32_t depth;           /* pushes not yet popped (may exceed LABELS_DEPTH) */
	struct seg_lslot *slot;   /* this thread's slot in the segment of generation gen */
	uint64_t gen;             /* labels_gen when slot was claimed (or found none) */
	uint32_t noslot;          /* 1: none was free in generation gen */
	uint64_t seq;             /* the slot's lock word as this thread last wrote it */
	uint64_t changes;         /* the changes this thread wrote to its slot */
	uint32_t saved[LABELS_DEPTH]; /* the set before each push */
};

extern __thread struct labels_thread labels_tls
	__attribute__((tls_model("initial-exec"))) SHIM_HIDDEN;

/* The calling thread's label set, for a bucket's key: one TLS load. */
static inline uint32_t labels_current(void)
{
	return labels_tls.cur;
}

/*
 * Makes the private index of the set table (one mmap). Called at
 * activation, after table_init; -1 leaves labels off (the API then only
 * counts depth), the shim otherwise working.
 */
int labels_init(void) SHIM_HIDDEN;

/* Unmaps the index; labels are off afterwards. */
void labels_fini(void) SHIM_HIDDEN;

/*
 * In a fork child, after table_restart (async-signal-safe: no lock, no
 * allocation): the interning lock free again, every thread's slot (only
 * this one exists) forgotten, and this thread's current set, if any,
 * published in a slot of the child's segment.
 */
void labels_fork_child(void) SHIM_HIDDEN;

/*
 * The exported ABI that include/cprof.h looks up (its functions of the
 * same names call these): push merges key/value pairs (NULL key ends
 * them, NULL value removes the key) over the thread's labels and
 * remembers the previous ones for pop; set replaces them; clear removes
 * them; active says whether labels are recorded. The variadic forms are
 * for programs that link libcprof.so itself.
 */
void cprof_labels_vpush(const char *key, const char *value, va_list ap) SHIM_EXPORT;
void cprof_labels_push(const char *key, const char *value, ...) SHIM_EXPORT;
void cprof_labels_pop(void) SHIM_EXPORT;
void cprof_labels_vset(const char *key, const char *value, va_list ap) SHIM_EXPORT;
void cprof_labels_set(const char *key, const char *value, ...) SHIM_EXPORT;
void cprof_labels_clear(void) SHIM_EXPORT;
int cprof_labels_active(void) SHIM_EXPORT;

#endif
