#ifndef CPROF_NAMING_H
#define CPROF_NAMING_H
/*
 * naming — output file names from templates, for scripts that capture
 * periodically: %p the pid, %t the capture's UTC start time
 * (YYYYmmddTHHMMSSZ), %n the capture number (from 1), %T the profile type,
 * %% a percent sign.
 *
 * Invariants:
 *  - an unknown %-sequence, a trailing lone %, or a result longer than the
 *    caller's buffer is an error, never a guess or a cut name;
 *  - the expansion never adds a '/' of its own: directories come from the
 *    template only.
 */
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct name_vars {
	pid_t pid;
	time_t when;
	unsigned number;
	const char *type;
};

/* Expand tmpl into out (cap bytes). 0, or -1 with a reason in why (why_cap bytes). */
int name_expand(const char *tmpl, const struct name_vars *v, char *out, size_t cap, char *why,
		size_t why_cap);

/* Whether tmpl names each capture differently (holds %n or %t). */
int name_varies(const char *tmpl);

/* The default template for a profile type and file extension: "cprof-%p-%T-%t[-%n].EXT". */
const char *name_default(int periodic, const char *ext, char *out, size_t cap);

#endif
