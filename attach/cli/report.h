#ifndef CPROF_REPORT_H
#define CPROF_REPORT_H
/*
 * report — what cprof-attach tells people and scripts about a capture:
 * the one-line note of what was written, the profiler's own costs
 * (--stats), the top functions for a person at a terminal, one JSON line
 * per capture for scripts (--summary json), and the live progress line.
 *
 * Invariants:
 *  - people get stderr; the JSON line goes to stdout unless the profile
 *    itself does (-o -), then to stderr; with -q only errors and the JSON
 *    line (which was asked for) are printed;
 *  - the progress line is drawn only on a terminal and erased when done,
 *    so it never lands in a log.
 */
#include <stdint.h>

#include "attach/source/result.h"

struct options;
struct target;
struct profile;
struct buf;

/* "wrote PATH: N samples from M threads over Ss" (unless quiet); for folded output, the values' type and unit (prof may be NULL). */
void report_written(const struct options *o, const struct capture_report *rep, const char *path,
		    const struct profile *prof);

/* The --stats lines. */
void report_stats(const struct capture_report *rep);

/* The n top functions (pprof -top style) on fd. */
void report_top(const struct profile *prof, unsigned n, int fd);

/* The samples the capture lost (a full queue or ring, a stop that timed out, dropped records). */
uint64_t report_lost(const struct capture_report *rep);

/* Where --top prints: stdout, unless the profile or the --summary lines go there. */
int report_top_fd(const struct options *o);

/*
 * The capture's JSON object without its closing "}\n" into b: path (NULL:
 * no local file), type, pid, capture number, samples, lost, ..., and
 * "label_keys", the sample label keys prof's samples carry (sorted; []
 * when prof is NULL: nothing was captured). The push module adds its
 * outcome and ends it. 0 or -1.
 */
int report_json_open(const struct options *o, const struct target *t,
		     const struct capture_report *rep, const struct profile *prof, const char *path,
		     unsigned number, int code, struct buf *b);

/* Where the JSON lines go: stdout, or stderr when the profile itself goes to stdout. */
int report_json_fd(const struct options *o);

/* The same, ended and printed as one line. */
void report_json(const struct options *o, const struct target *t, const struct capture_report *rep,
		 const struct profile *prof, const char *path, unsigned number, int code);

/* Draw (or, with done, erase) the progress line: elapsed of total, samples, threads. */
void report_progress(uint64_t elapsed_ns, uint64_t total_ns, uint64_t samples, uint64_t threads,
		     int done);

#endif
