#ifndef CPROF_FORMATS_H
#define CPROF_FORMATS_H
/*
 * formats — the output formats (--format) as one table: name, help, file
 * extension, the writer, and what the format needs captured. The kinds
 * table says which formats each kind accepts (FORMAT_* bits); the command
 * line finds a format here and never lists them itself.
 *
 * Invariants:
 *  - every row has a writer and an extension; format_find() returns NULL
 *    for a name that is not a row, never a stand-in;
 *  - a writer only reads the profile and the write_info, and writes
 *    into the capped buffer it is given.
 */
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"

struct profile;

#define FORMAT_PPROF 1u  /* gzip-compressed profile.proto */
#define FORMAT_TEXT 2u   /* Go's legacy text form (debug=1) */
#define FORMAT_DUMP 4u   /* a thread dump for people (debug=2) */
#define FORMAT_FOLDED 8u /* collapsed stacks for flamegraph.pl, inferno, speedscope */
#define FORMAT_SVG 16u   /* a self-contained interactive flame graph */
#define FORMAT_STACKS (FORMAT_PPROF | FORMAT_FOLDED | FORMAT_SVG) /* every kind has these */

/* A kind's legacy text writer (its name for the header). 0 or -1. */
typedef int format_text_fn(const struct profile *p, const char *kind, struct buf *b);

/* What a writer knows of the capture beyond the profile. */
struct write_info {
	pid_t pid;
	const char *comm;
	const char *kind;            /* the profile type's name */
	format_text_fn *text;        /* the kind's legacy text writer, or NULL */
	uint64_t start_real_ns;      /* when the capture began */
	uint64_t samples;
	int frame_lines;             /* folded, svg: frames are "function (file:line)" */
	const char *const *group_by; /* folded, svg: label keys of the root frames, or NULL */
};

struct format {
	const char *name;
	const char *help;
	const char *ext;             /* file extension of a default output name */
	unsigned bit;                /* FORMAT_* */
	int (*write)(const struct profile *p, const struct write_info *w, struct buf *b);
	unsigned labels;             /* labels (source.h LABEL_*) it needs on every sample */
	int raw;                     /* it wants raw sample counts, not estimates */
};

/* The format called name, or NULL. */
const struct format *format_find(const char *name);

/* All formats; *n set to their number. The first is the default. */
const struct format *format_all(unsigned *n);

#endif
