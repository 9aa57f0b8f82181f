#ifndef CPROF_RESULT_H
#define CPROF_RESULT_H
/*
 * result — what one capture reports besides its profile: the window it
 * covers, how the target fared, and each source's own figures. Filled by
 * a source (source.h), read by the command line's report and output.
 *
 * Invariants:
 *  - a source zeroes it first, and fills the common part on every path
 *    that returns EXIT_OK;
 *  - ptrace is set exactly when sm and rec hold a ptrace capture's figures.
 */
#include <stdint.h>

#include "attach/engine/sampler.h"
#include "attach/source/record.h"

struct capture_report {
	/* Every source fills these. */
	uint64_t start_real_ns;    /* when the capture began, ns since the epoch */
	uint64_t duration_ns;      /* the window the profile covers */
	uint64_t samples;          /* samples taken (stacks read from the shim) */
	uint64_t threads;          /* distinct threads sampled; 0 when not applicable */
	uint64_t processes;        /* --children: processes traced (the root and descendants) */
	int gone, execed;          /* the target exited / exec'd during the capture */
	int stop_signal;           /* SIGINT/SIGTERM ended the capture early, or 0 */
	int lost_access;           /* the right to trace the target was lost mid-capture */
	double cpu_self_s;         /* cprof-attach's own CPU time */
	/* The ptrace source fills these (ptrace set). */
	int ptrace;
	struct sampler_results sm;
	struct record_stats rec;
	/* The shim's segment. */
	uint64_t seg_torn, seg_dropped;
};

#endif
