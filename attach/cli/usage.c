/*
 * usage.c — cprof-attach's --help, made from the rows of optable.c and
 * commands.c: a command's usage and summary, the list of commands, each
 * option it takes with its help at one column, the exit codes.
 */
#include <stdio.h>
#include <string.h>

#include "attach/cli/commands.h"
#include "attach/cli/optable.h"
#include "attach/kinds/kinds.h"


/* The names of the kinds for which want(k) holds, as "a, b, c". */
static void kinds_named(FILE *f, int (*want)(const struct kind *))
{
	const struct kind *k;
	unsigned i, n, shown = 0;

	k = kind_all(&n);
	for (i = 0; i < n; i++)
		if (want(&k[i]))
			fprintf(f, "%s%s", shown++ ? ", " : "", k[i].name);
}

/* One row: its names, then its help from OPTABLE_HELP_COL ("%K" its kinds). */
static void usage_row(FILE *f, const struct optdef *d)
{
	const char *p = d->help;
	int w;

	if (d->key < 256)
		w = fprintf(f, "  -%c, --%s", d->key, d->name);
	else
		w = fprintf(f, "      --%s", d->name);
	if (d->arg && d->arg[0] == '[') /* an optional value: --top[=N] */
		w += fprintf(f, "[=%.*s]", (int)strlen(d->arg) - 2, d->arg + 1);
	else if (d->arg)
		w += fprintf(f, " %s", d->arg);
	if (w >= OPTABLE_HELP_COL)
		fprintf(f, "\n%*s", OPTABLE_HELP_COL, "");
	else
		fprintf(f, "%*s", OPTABLE_HELP_COL - w, "");
	for (; *p; p++) {
		if (p[0] == '%' && p[1] == 'K' && d->kinds) {
			kinds_named(f, d->kinds);
			p++;
		} else if (*p == '\n') {
			fprintf(f, "\n%*s", OPTABLE_HELP_COL, "");
		} else {
			fputc(*p, f);
		}
	}
	fputc('\n', f);
	if (d->more)
		d->more(f);
}

static const char *const group_title[OPTGROUP_N] = {
	[OPTGROUP_MAIN] = "options:",
	[OPTGROUP_PUSH] = "pushing to Grafana Pyroscope (pprof only; see doc/fleet.md):",
};

static const char usage_stop[] =
	"\n"
	"Stop early with Ctrl-C (SIGINT) or SIGTERM: what was collected is written;\n"
	"a second signal ends cprof-attach at once.\n"
	"Files appear atomically: a temporary file is renamed into place.\n";

/* A command with a loop of its own (top) writes no file. */
static const char usage_stop_live[] =
	"\n"
	"Quit with q, Ctrl-C (SIGINT) or SIGTERM (exit 0): the capture in flight ends\n"
	"and detaches; a second signal ends cprof-attach at once.\n";

static const char usage_tail[] =
	"\n"
	"exit codes:\n"
	"  0  success\n"
	"  1  internal error (out of memory, ...)\n"
	"  2  usage error: bad option or value, or --push without libcurl\n"
	"  3  cannot attach: no such process, not permitted, already traced,\n"
	"     a zombie, a kernel thread, cprof-attach itself, or (heap types) no\n"
	"     libcprof.so in it, or (--inject) injection refused or no thread\n"
	"     free to take the call before --inject-deadline\n"
	"  4  the target went away before anything was captured\n"
	"  5  partial: the target exited or exec'd during a capture (what was\n"
	"     captured was written), or a series ended early because it went away\n"
	"  6  the profile could not be written\n"
	"  7  --push: the captures succeeded but some profiles were not pushed (they\n"
	"     wait in the spool, or were dropped)\n"
	"  8  interrupted: a stop signal not obeyed within 1 s, a second one, or a\n"
	"     read of the target's memory that did not return; this capture's\n"
	"     profile is not written (never half-written)\n";

void optable_usage(FILE *f, const struct command *c, int named)
{
	const struct optdef *rows;
	unsigned grp, nrows;
	size_t i;

	rows = optable_all(&nrows);
	fprintf(f, "usage: cprof-attach %s\n\n%s\n", c->usage, c->summary);
	if (!named)
		commands_list(f);
	for (grp = 0; grp < OPTGROUP_N; grp++) {
		unsigned shown = 0;

		for (i = 0; i < nrows; i++) {
			if (rows[i].group != grp || !commands_takes(c, rows[i].key))
				continue;
			if (!shown++)
				fprintf(f, "\n%s\n", group_title[grp]);
			usage_row(f, &rows[i]);
		}
	}
	fputs(c->run ? usage_stop_live : usage_stop, f);
	fputs(usage_tail, f);
}
