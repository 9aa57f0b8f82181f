#ifndef CPROF_COMMANDS_H
#define CPROF_COMMANDS_H
/*
 * commands — what a user does, each a row: its name, its line of usage,
 * what it is for, the defaults it sets before the options are read, and
 * the options it does not take. `cprof-attach -p PID ...` with no command
 * is `record`, exactly as before commands existed.
 *
 * Invariants:
 *  - a command without a run of its own only presets options a user could
 *    give by hand: it adds no behaviour, so `dump -p PID` is `-t threads
 *    --format dump -o - -p PID`, byte for byte;
 *  - a command with a run (top) runs its captures in its own loop, but
 *    each is the capture every command runs (series_request() and the
 *    kind's source): what a capture does to the target is the same;
 *  - a command that launches (run.h) starts a program and runs the same
 *    captures on it;
 *  - an option a command refuses is a usage error naming both.
 */
#include <stdio.h>

struct options;
struct target;

struct command {
	const char *name;
	const char *usage;   /* after "usage: cprof-attach " */
	const char *brief;   /* one line, for the list of commands */
	const char *summary; /* lines of what it does, for its --help */
	void (*preset)(struct options *o);
	const int *refuses;  /* option keys it does not take, 0-ended; NULL: none */
	/* Its own loop over captures (an EXIT_* code); NULL: series_run(). */
	int (*run)(const struct options *o, const struct target *t);
	int launches;        /* starts a command line given after its options (run), no -p */
};

#define COMMANDS_MAX 16 /* rows in commands.c */

/* The rows, *n of them. */
const struct command *commands_all(unsigned *n);

/* The default command, record. */
const struct command *commands_default(void);

/* The command called name, or NULL. */
const struct command *commands_find(const char *name);

/* Whether c takes the option whose key is key. */
int commands_takes(const struct command *c, int key);

/* The list of commands, for the top --help. */
void commands_list(FILE *f);

#endif
