/*
 * commands.c — the rows of cprof-attach's commands (commands.h). A new
 * command is a row here: the defaults it sets and the options it refuses;
 * the capture it runs is the one every command runs.
 */
#include <string.h>

#include "attach/cli/commands.h"
#include "attach/cli/options.h"
#include "attach/cli/top.h"
#include "attach/kinds/formats.h"
#include "attach/kinds/kinds.h"

/* Keys of optable.c's long-only rows that commands name. */
#include "attach/cli/optkeys.h"

static void preset_dump(struct options *o)
{
	o->kind = kind_find("threads");
	o->format = format_find("dump");
	o->output = "-";
}


/* Refreshed every second, function names only (source lines cost time every interval). */
static void preset_top(struct options *o)
{
	o->every_ns = 1000000000ull;
	o->no_lines = 1;
}

/* A live view: no file, no format, no window but its interval, no push. */
static const int top_refuses[] = {
	'd', 'o', OPT_FORMAT, OPT_EVERY, OPT_SUMMARY, OPT_TOP, OPT_CHILDREN, OPT_NO_LINES,
	OPT_NO_LINE_CACHE, OPT_LINES, OPT_GROUP_BY, OPT_STATS, OPT_PUSH, OPT_APP, OPT_LABEL,
	OPT_SPOOL, OPT_SPOOL_MAX, OPT_PUSH_TIMEOUT, OPT_TENANT, OPT_BASIC_AUTH, OPT_BEARER_TOKEN,
	OPT_MIN_WAIT, OPT_WAKER_STACKS, 0,
};

/* Every command but top: --interval is top's. */
static const int record_refuses[] = { OPT_INTERVAL, 0 };

/* One snapshot, never pushed: no type, window, rate, sampler, series or push. */
static const int dump_refuses[] = {
	't', 'd', 'F', OPT_SAMPLER, OPT_EVERY, OPT_COUNT, OPT_PUSH, OPT_APP, OPT_LABEL, OPT_SPOOL,
	OPT_SPOOL_MAX, OPT_PUSH_TIMEOUT, OPT_TENANT, OPT_BASIC_AUTH, OPT_BEARER_TOKEN, OPT_INTERVAL, 0,
};

/*
 * One run of one program: no pid (it is the program's), no series, no push,
 * and no JSON lines (each type's profile is written by its own capture).
 */
static const int run_refuses[] = {
	'p', OPT_EVERY, OPT_COUNT, OPT_SUMMARY, OPT_PUSH, OPT_APP, OPT_LABEL, OPT_SPOOL,
	OPT_SPOOL_MAX, OPT_PUSH_TIMEOUT, OPT_TENANT, OPT_BASIC_AUTH, OPT_BEARER_TOKEN, OPT_INTERVAL, 0,
};

static const struct command rows[] = {
	{ "record", "[record] -p PID [-t TYPE] [-d DURATION] [-F HZ] [-o FILE] [options]",
	  "sample a process for a while, write a profile (the default)",
	  "Attach to a running process from outside (ptrace, or for cpu profiles the\n"
	  "kernel's perf events), sample its threads, detach, and write a pprof\n"
	  "profile (gzip-compressed profile.proto) that `go tool pprof` and `pprof`\n"
	  "read. The target keeps running throughout; no thread is left stopped,\n"
	  "whatever happens to cprof-attach. The default command.",
	  NULL, record_refuses, NULL, 0 },
	{ "dump", "dump -p PID [options]",
	  "every thread's stack now, for people, on standard output",
	  "Every thread's stack now, for people, on standard output: what each\n"
	  "thread is doing (its state, the call it sleeps in, its user and, as root,\n"
	  "kernel frames). The same as record -t threads --format dump -o -; -o FILE\n"
	  "writes it to a file, --format pprof|folded|svg|text another form.",
	  preset_dump, dump_refuses, NULL, 0 },
	{ "top", "top -p PID [-t TYPE] [-F HZ] [--interval DUR] [options]",
	  "a live view of the hottest functions and the threads, refreshed",
	  "A live view, as top(1) is for processes: the functions that cost the most\n"
	  "(self: in the function itself; total: with what it calls), over the last\n"
	  "interval and since the start, each thread's share (cpu: of one CPU), the\n"
	  "sampler and the samples lost. Each interval is one capture of that length,\n"
	  "the one record takes: the target is left as every capture leaves it.\n"
	  "Keys: s sort by self, t by total, a sort by the last interval or since\n"
	  "the start, p pause (no capture while paused), f show one thread (type its\n"
	  "tid; empty: every thread), q or Ctrl-C quit. When standard output is not a\n"
	  "terminal: one block of plain text per interval (--count N: N of them).",
	  preset_top, top_refuses, top_run, 0 },
	{ "run", "run [-t TYPE[,TYPE...]] [-d DURATION] [-o FILE] [options] -- CMD [ARGS...]",
	  "start CMD with libcprof.so preloaded, profile it until it exits",
	  "Start CMD with libcprof.so preloaded (LD_PRELOAD, put before any the\n"
	  "environment has), so heap, allocs, mutex, block, threadcreate and labels\n"
	  "count from its first instruction; profile it until it exits, -d passes,\n"
	  "or cprof-attach gets SIGINT/SIGTERM (Ctrl-C); write the profile(s), and\n"
	  "exit with CMD's exit status (128+N when signal N ended it).\n"
	  "-t takes several types, comma-separated (-t cpu,heap): one file each,\n"
	  "the type before the extension (-o p.pb.gz: p.cpu.pb.gz, p.heap.pb.gz).\n"
	  "cpu, wall and offcpu are sampled from just after CMD starts by a\n"
	  "`record -p` of their own; the other types are read from libcprof.so at\n"
	  "CMD's exit (CMD waits for it, at most 10 s), or when -d passes or the\n"
	  "stop signal comes (to CMD too, at a terminal: its default action then\n"
	  "waits for that read). A stop signal is passed on to CMD after the read.\n"
	  "At -d, CMD runs on unprofiled and cprof-attach waits for it.\n"
	  "Before CMD runs: 127 CMD not found, 126 CMD not executable, else the\n"
	  "exit codes below.",
	  NULL, run_refuses, NULL, 1 },
};

#define NCMDS (sizeof(rows) / sizeof(rows[0]))

_Static_assert(NCMDS <= COMMANDS_MAX, "commands.h: COMMANDS_MAX");

const struct command *commands_all(unsigned *n)
{
	*n = NCMDS;
	return rows;
}

const struct command *commands_default(void)
{
	return &rows[0];
}

const struct command *commands_find(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (!strcmp(rows[i].name, name))
			return &rows[i];
	return NULL;
}

int commands_takes(const struct command *c, int key)
{
	const int *k;

	for (k = c->refuses; k && *k; k++)
		if (*k == key)
			return 0;
	return 1;
}

void commands_list(FILE *f)
{
	size_t i;

	fprintf(f, "\ncommands (cprof-attach COMMAND --help for each):\n");
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-8s %s\n", rows[i].name, rows[i].brief);
}
