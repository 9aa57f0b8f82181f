#ifndef CPROF_OPTABLE_H
#define CPROF_OPTABLE_H
/*
 * optable — each of cprof-attach's options defined once: its names, the
 * name of its value, what it sets, and its help. getopt's tables, --help
 * and the "did you mean" of a mistyped option are made from the rows; the
 * docs test (tests/e2e/t_docs.sh) holds the man page and doc/options.md to
 * the --help this prints. Private to attach/cli/options.c.
 *
 * Invariants:
 *  - a row's set() is the only code that reads its value; it fails with
 *    one line naming the option and the value (common/err.h);
 *  - an option that needs others, or excludes them, is checked after the
 *    whole line is read (options_check), never in set();
 *  - every row has help: an option --help does not show does not exist.
 */
#include <stdio.h>
#include <getopt.h>

struct command;
struct given;
struct kind;
struct options;

#define OPTABLE_ROWS_MAX 64 /* room the getopt tables need: optable_getopt() */

enum optgroup { OPTGROUP_MAIN, OPTGROUP_PUSH, OPTGROUP_N };

struct optdef {
	const char *name;  /* the long name, without "--" */
	int key;           /* its short letter, or a number past 255 for long-only */
	const char *arg;   /* the value's name in --help; NULL for a flag, "[N]" for an optional one */
	int (*set)(struct options *o, struct given *g, const struct optdef *d, const char *arg);
	const char *help;  /* lines split at \n; "%K" is the kinds it applies to */
	int (*kinds)(const struct kind *k); /* for "%K", or NULL */
	void (*more)(FILE *f);              /* lists the table cannot hold (types, formats) */
	enum optgroup group;
};

/* The rows, *n of them. */
const struct optdef *optable_all(unsigned *n);

/* The row whose getopt value is key, or NULL. */
const struct optdef *optable_find(int key);

/*
 * getopt_long's tables from the rows: longs (n + 1 entries, the last
 * zeroed) and shorts (":" then each letter, with ":" after one that takes
 * a value, "::" an optional one; room for 1 + 3 * n + 1 bytes).
 */
void optable_getopt(struct option *longs, char *shorts);

/* A row's set() asks for the help of the command being read (usage.c). */
#define OPTSET_HELP 2

/*
 * The --help of command c (usage.c): its usage and summary, the commands
 * when none was named, the options it takes, the exit codes.
 */
void optable_usage(FILE *f, const struct command *c, int named);

/* The column where a row's help starts, and where more() lists align. */
#define OPTABLE_HELP_COL 25


#endif
