#ifndef CPROF_OPTIONS_H
#define CPROF_OPTIONS_H
/*
 * options — cprof-attach's command line, and the parsers for its values.
 *
 * Invariants:
 *  - a value that does not parse is a usage error with one line naming the
 *    option and the value; nothing is guessed (a duration's unit is
 *    given, or it is a bare number of seconds, as sleep(1) reads one);
 *  - the parsed options are complete: every field has its default when the
 *    option was not given.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/push/push.h"
#include "attach/source/source.h"
#include "common/exitcode.h"
#include "writer/folded.h"

#define OPTIONS_MAX_KEY 64 /* bytes of one --group-by key */
#define OPTIONS_MAX_DEBUG_DIRS 16 /* --debug-dir, as unwind/debugfind.h takes */

#define OPT_MAX_DURATION_NS (7ull * 24 * 3600 * 1000000000ull) /* = TARGET_WINDOW_MAX_NS */
#define OPT_MIN_HZ 1u
#define OPT_MAX_HZ 10000u
#define OPT_MIN_STACK 4096u
#define OPT_MAX_STACK (1u << 20)
#define OPT_MIN_INTERVAL_NS 100000000ull /* top --interval: 100 ms */
#define OPT_TOP_N 10u     /* --top's functions, and those shown on a terminal */
#define OPT_MAX_TOP 1000u
#define OPT_MAX_KINDS 8u   /* run -t TYPE,TYPE...: types at once */

struct command;
struct format;
struct kind;

struct inject;

struct options {
	const struct command *command; /* record unless another was named */
	int command_given;        /* a command was named on the line */
	pid_t pid;
	uint64_t duration_ns;     /* default 30 s */
	int duration_given;       /* -d was on the command line */
	unsigned hz;              /* default 100 */
	const char *output;       /* NULL: a name from pid, type and time */
	const struct kind *kind;  /* default cpu */
	size_t stack_cap;         /* bytes of stack copied per sample, default 64 KiB */
	const struct format *format; /* default pprof */
	int quiet;
	int stats;
	uint64_t every_ns;        /* --every: start a capture this often; 0: once */
	unsigned count;           /* --count: captures to take; 0: until interrupted */
	int summary_json;         /* --summary json */
	unsigned top;             /* --top[=N]: print N top functions whatever the output; 0: not given */
	int children;             /* --children: the process and its descendants, one profile */
	enum sampler_wish sampler; /* --sampler: auto (default), perf or ptrace */
	int stack_given;          /* --stack-size was given */
	int progress;             /* draw the live progress line (stderr is a terminal) */
	int no_lines;             /* --no-lines: function names only, no source lines */
	int no_line_cache;        /* --no-line-cache: every line from DWARF, none kept */
	int no_kernel;            /* --no-kernel: no kernel frames */
	uint64_t min_wait_ns;     /* --min-wait: shorter waits to one frame per thread */
	int waker_stacks;         /* --waker-stacks */
	int frame_lines;          /* --lines: folded and svg frames are "function (file:line)" */
	/* --group-by: label keys whose values are the root frames (folded, svg); NULL-ended */
	const char *group_by[FOLDED_MAX_GROUP + 1];
	char group_keys[FOLDED_MAX_GROUP][OPTIONS_MAX_KEY + 1];
	struct push_options push; /* --push and its companions; push.url NULL: none */
	const char *debug_dirs[OPTIONS_MAX_DEBUG_DIRS]; /* --debug-dir, in the order given */
	unsigned ndebug_dirs;
	/* run: the types (kind is kinds[0]) and the command line to start, NULL-ended */
	const struct kind *kinds[OPT_MAX_KINDS];
	unsigned nkinds;
	char **cmd;
	int inject;               /* --inject: load libcprof.so into the process for this capture */
	int eject;                /* --eject: disarm an injected libcprof.so, nothing else */
	uint64_t inject_rate;     /* --inject-rate: bytes between heap samples; 0: the shim's default */
	uint64_t inject_deadline_ms; /* --inject-deadline: each remote call, thread choice included */
	struct inject *inject_state; /* main.c's, kept across a series; NULL without --inject */
};

/* What the command line gave, for the checks after it is read. */
struct given {
	int pid, timing, hz, count, sampler;
	const char *waits;     /* an offcpu-only option given (its name), or NULL */
	const char *push_only; /* an option that needs --push (its long name), when one was given */
};

/*
 * Parse argv (optable.c: a command, then the options by their rows).
 * Returns 0 to go on, 1 when --help or --version was printed (exit 0), or
 * -1 after printing a usage error (exit EXIT_USAGE).
 */
int options_parse(struct options *o, int argc, char **argv);

/* The checks across options, and the defaults that depend on others. 0 or -1. */
int options_check(struct options *o, const struct given *g);

/* "30s", "500ms", "2m", "1h", "1m30s", "1.5s", "30" (seconds) -> ns; 0 or -1. Must be > 0. */
int parse_duration(const char *s, uint64_t *ns);

/* A whole number in [min, max], with an optional K/M (x1024) suffix when sizes is set. */
int parse_uint(const char *s, uint64_t min, uint64_t max, int sizes, uint64_t *out);

#endif
