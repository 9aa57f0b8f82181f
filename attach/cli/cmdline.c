/*
 * cmdline.c — cprof-attach's command line read: a command's name, then
 * the options by optable.c's rows (each row's set() reads its value), the
 * checks across options (options.c), and the nearest option named when
 * one is mistyped.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "attach/cli/commands.h"
#include "attach/cli/optable.h"
#include "attach/cli/options.h"
#include "attach/kinds/formats.h"
#include "attach/kinds/kinds.h"
#include "common/err.h"

/* Edits from a to b (both at most 63 bytes considered), capped at 9. */
static unsigned edits(const char *a, const char *b)
{
	unsigned prev[64], cur[64], i, j, la = (unsigned)strnlen(a, 63), lb = (unsigned)strnlen(b, 63);

	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			unsigned sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			unsigned del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, sizeof(unsigned) * (lb + 1));
	}
	return prev[lb] > 9 ? 9 : prev[lb];
}

/* Of names[0..n), the nearest to w within two edits (a third of its length at most), or NULL. */
static const char *nearest(const char *w, const char *const *names, unsigned n)
{
	const char *best = NULL;
	unsigned bestd = 3, d, i;

	for (i = 0; i < n; i++) {
		d = edits(w, names[i]);
		/* A short name is not "near" what it shares two letters with. */
		if (d < bestd && d * 3 <= strlen(names[i])) {
			bestd = d;
			best = names[i];
		}
	}
	return best;
}

/* The option nearest to a mistyped word ("--frequncy"), or NULL. */
static const char *suggest_option(const char *word)
{
	const char *names[OPTABLE_ROWS_MAX];
	const struct optdef *rows;
	unsigned i, nrows;
	char w[64];
	size_t n;

	while (*word == '-')
		word++;
	n = strcspn(word, "=");
	if (n < 2 || n >= sizeof(w))
		return NULL;
	memcpy(w, word, n);
	w[n] = 0;
	rows = optable_all(&nrows);
	for (i = 0; i < nrows; i++)
		names[i] = rows[i].name;
	return nearest(w, names, nrows);
}

/* The command nearest to a mistyped one ("dumb"), or NULL. */
static const char *suggest_command(const char *word)
{
	const char *names[COMMANDS_MAX];
	const struct command *c;
	unsigned i, n;

	c = commands_all(&n);
	for (i = 0; i < n; i++)
		names[i] = c[i].name;
	return strlen(word) < 64 ? nearest(word, names, n) : NULL;
}

int options_parse(struct options *o, int argc, char **argv)
{
	struct option longs[OPTABLE_ROWS_MAX + 1];
	char shorts[2 + 3 * OPTABLE_ROWS_MAX + 1];
	const struct optdef *d;
	const char *near;
	struct given g = { 0 };
	int c, r;

	memset(o, 0, sizeof(*o));
	o->duration_ns = 30ull * 1000000000ull;
	o->hz = 100;
	o->kind = kind_find("cpu");
	o->stack_cap = 64 * 1024;
	o->format = format_find("pprof");
	o->command = commands_default();
	/* A first word that is not an option names the command: dump -p PID. */
	if (argc > 1 && argv[1][0] != '-') {
		if (!(o->command = commands_find(argv[1]))) {
			if (argv[1][0] && argv[1][strspn(argv[1], "0123456789")] == 0)
				return error("unknown command \"%s\" (a process id? -p %s)", argv[1],
					     argv[1]);
			if ((near = suggest_command(argv[1])))
				return error("unknown command \"%s\" (did you mean %s? see --help)",
					     argv[1], near);
			return error("unknown command \"%s\" (see --help for the commands)", argv[1]);
		}
		o->command_given = 1;
		argc--;
		argv++;
	}
	if (o->command->preset)
		o->command->preset(o);
	optable_getopt(longs, shorts);
	/* run: the options end at the first word that is not one (CMD), as with --. */
	if (o->command->launches) {
		memmove(shorts + 1, shorts, strlen(shorts) + 1);
		shorts[0] = '+';
	}
	opterr = 0;
	optind = 0; /* glibc: 0 re-reads the optstring's "+" (a second parse, tests) */
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		/* A long option's optopt is its row's key (past 255 for most): name what was typed. */
		if (c == ':') {
			if (strncmp(argv[optind - 1], "--", 2) != 0 && optopt > 0 && optopt < 256)
				return error("option \"-%c\" needs a value (see --help)", optopt);
			return error("option \"%s\" needs a value (see --help)", argv[optind - 1]);
		}
		if (!(d = optable_find(c))) {
			if (optopt)
				return error("unknown option \"-%c\" (see --help)", optopt);
			if ((near = suggest_option(argv[optind - 1])))
				return error("unknown option \"%s\" (did you mean --%s? see --help)",
					     argv[optind - 1], near);
			return error("unknown option \"%s\" (see --help)", argv[optind - 1]);
		}
		if (!commands_takes(o->command, c))
			return error("%s does not take --%s (see cprof-attach %s --help)",
				     o->command->name, d->name, o->command->name);
		if ((r = d->set(o, &g, d, optarg)) == OPTSET_HELP) {
			optable_usage(stdout, o->command, o->command_given);
			return 1;
		}
		if (r != 0)
			return r;
	}
	if (o->command->launches && optind < argc)
		o->cmd = argv + optind;
	else if (optind < argc)
		return error("unexpected argument \"%s\" (see --help)", argv[optind]);
	return options_check(o, &g);
}
