#ifndef CPROF_KINDS_H
#define CPROF_KINDS_H
/*
 * kinds — the profile types cprof-attach can capture, as a table whose
 * rows carry their behaviour: the source a type reads, and the hook that
 * differs between types of one source (for ptrace, the policy: which
 * threads a tick takes and what a sample weighs; for the shim's segment,
 * the view: which bucket kind and which values), the sample types it
 * declares, the labels its samples carry, the formats it can be written
 * in and its legacy text writer. The command line, the series and the
 * output code only read rows; adding a type is adding a row (plus, for a
 * new shim-based type, a view and the shim's side).
 *
 * Invariants:
 *  - every row names a source; a row whose source may sample with ptrace
 *    (source_ptrace, or source_auto, which may choose it) names a policy,
 *    a segment row a view, never both; a source with its own bookkeeping
 *    (source_offcpu) neither;
 *  - a row that accepts FORMAT_TEXT has a text writer.
 */
#include <stdint.h>

#include "attach/kinds/formats.h"
#include "attach/source/source.h"

/* What -d means for a kind. */
enum kind_duration {
	DURATION_NONE,   /* one snapshot: -d is refused */
	DURATION_WINDOW, /* sample for -d (default 30s) */
	DURATION_DELTA,  /* a snapshot; with -d, the change over that window */
};

/* Kind flags. */
#define KIND_RUNS_ONLY 1u /* only running code counts: a stopped target, or a master whose workers work, gives nothing */

struct kind {
	const char *name;
	const char *help;
	const struct source *source;   /* where its data comes from */
	const struct policy *policy;   /* the ptrace source: which threads, what weight */
	const struct shim_view *view;  /* the segment source: which buckets, what values */
	enum kind_duration duration;
	unsigned flags;                /* KIND_* */
	unsigned labels;               /* LABEL_* */
	unsigned formats;              /* FORMAT_* it can be written in */
	format_text_fn *text;          /* its legacy text form, when formats has FORMAT_TEXT */
	struct sample_types types;
};

/* What a kind takes on the command line beyond -t. */
#define KIND_TAKES_HZ 1u       /* it samples on a clock */
#define KIND_TAKES_CHILDREN 2u /* its source can take descendants */
#define KIND_TAKES_SAMPLER 4u  /* its source chooses a sampler (--sampler) */
#define KIND_TAKES_WAITS 8u    /* it weighs waits off the CPU (--min-wait, --waker-stacks) */

/* The kind called name, or NULL. */
const struct kind *kind_find(const char *name);

/* All kinds; *n set to their number. The first is the default. */
const struct kind *kind_all(unsigned *n);

/* KIND_TAKES_* for k. */
unsigned kind_takes(const struct kind *k);

#endif
