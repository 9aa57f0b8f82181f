#ifndef CPROF_KINDS_H
#define CPROF_KINDS_H
/*
 * kinds — the profile types cprof-attach can capture, as a table: how the
 * tracer picks threads and weighs samples, the sample types the profile
 * declares, the labels its samples carry and the output formats it can be
 * written in. Adding a type is adding a row (and, for a new source of
 * data, a new policy), not a branch in every file.
 */
#include <stdint.h>

#include "attach/source/source.h"

struct profile;

enum kind_policy {
	POLICY_CPU,    /* threads that used CPU since their last sample, weighted by it */
	POLICY_WALL,   /* every thread at every tick, weighted by elapsed time */
	POLICY_ONCE,   /* every thread once, weight 1 */
	POLICY_SHIM,   /* no thread is touched: the shim's segment is read */
};

/* What -d means for a kind. */
enum kind_duration {
	DURATION_NONE,   /* one snapshot: -d is refused */
	DURATION_WINDOW, /* sample for -d (default 30s) */
	DURATION_DELTA,  /* a snapshot; with -d, the change over that window */
};

/* Which of the shim's numbers a segment kind reports. */
enum kind_values {
	VALUES_NONE,
	VALUES_HEAP,     /* alloc_objects, alloc_space, inuse_objects, inuse_space */
	VALUES_THREADS,  /* threads created */
};

/* Labels a sample carries. */
#define LABEL_THREAD 1u  /* "thread": the thread's name */
#define LABEL_TID 2u     /* "tid": its id (numeric) */
#define LABEL_STATE 4u   /* "state": running, sleeping, disk wait, stopped... */
#define LABEL_SYSCALL 8u /* "syscall": the call a sleeping thread sleeps in */
#define LABEL_PID 16u    /* "pid": its process (numeric); --children */
#define LABEL_PROCESS 32u /* "process": its process's name; --children */

/* Output formats (--format). */
#define FORMAT_PPROF 1u /* gzip-compressed profile.proto */
#define FORMAT_TEXT 2u  /* Go's legacy text form (debug=1) */
#define FORMAT_DUMP 4u  /* a thread dump for people (debug=2) */
#define FORMAT_FOLDED 8u /* collapsed stacks for flamegraph.pl, inferno, speedscope */
#define FORMAT_SVG 16u  /* a self-contained interactive flame graph */
#define FORMAT_STACKS (FORMAT_PPROF | FORMAT_FOLDED | FORMAT_SVG) /* every kind has these */

struct kind {
	const char *name;
	const char *help;
	capture_fn *capture;        /* where its data comes from */
	enum kind_policy policy;
	enum kind_duration duration;
	enum kind_values values;
	unsigned labels;            /* LABEL_* */
	unsigned formats;           /* FORMAT_* it can be written in */
	const char *sample[4][2];   /* up to four (type, unit) pairs */
	const char *period_type[2];
	const char *default_type;   /* default_sample_type, or NULL for the last */
};

/* The kind called name, or NULL. */
const struct kind *kind_find(const char *name);

/* All kinds; *n set to their number. */
const struct kind *kind_all(unsigned *n);

/* Declare k's sample types, period type (with period) and default type in prof. 0 or -1. */
int kind_setup(const struct kind *k, struct profile *prof, int64_t period);

#endif
