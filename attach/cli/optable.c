/*
 * optable.c — the rows of cprof-attach's options (optable.h): what each
 * sets and what --help says of it, the getopt tables and --help made from
 * them.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "attach/cli/commands.h"
#include "attach/cli/optable.h"
#include "attach/cli/optkeys.h"
#include "attach/cli/options.h"
#include "attach/kinds/formats.h"
#include "attach/kinds/kinds.h"
#include "attach/push/label.h"
#include "common/err.h"

#ifndef CPROF_VERSION
#define CPROF_VERSION "0.1"
#endif



static const char *const sampler_names[] = {
	[SAMPLER_AUTO] = "auto", [SAMPLER_PERF] = "perf", [SAMPLER_PTRACE] = "ptrace",
};

static int is_delta(const struct kind *k)
{
	return k->duration == DURATION_DELTA;
}

static int takes_children(const struct kind *k)
{
	return !!(kind_takes(k) & KIND_TAKES_CHILDREN);
}

static int takes_hz(const struct kind *k)
{
	return !!(kind_takes(k) & KIND_TAKES_HZ);
}

static int takes_sampler(const struct kind *k)
{
	return !!(kind_takes(k) & KIND_TAKES_SAMPLER);
}

static int takes_waits(const struct kind *k)
{
	return !!(kind_takes(k) & KIND_TAKES_WAITS);
}

/* --min-wait DUR: waits shorter than this go to one frame per thread. */
static int set_min_wait(struct options *o, struct given *g, const struct optdef *d,
			const char *arg)
{
	(void)d;
	if (parse_duration(arg, &o->min_wait_ns) < 0)
		return error("invalid --min-wait \"%s\": expected a duration (100us, 1ms)", arg);
	g->waits = "--min-wait";
	return 0;
}

static int set_pid(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	uint64_t v;

	(void)d;
	if (parse_uint(arg, 1, INT_MAX, 0, &v) < 0)
		return error("invalid pid \"%s\": expected a process id", arg);
	o->pid = (pid_t)v;
	g->pid = 1;
	return 0;
}

/* -t TYPE, or (run) TYPE,TYPE...: distinct known types, kinds[0] is o->kind. */
static int set_type(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	const char *p = arg, *end;
	char name[32];
	size_t len;
	unsigned i;

	(void)g, (void)d;
	o->nkinds = 0;
	for (;;) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len >= sizeof(name))
			len = sizeof(name) - 1; /* then unknown, and named cut */
		memcpy(name, p, len);
		name[len] = 0;
		if (!(o->kind = kind_find(name)))
			return error("unknown profile type \"%s\" (see --help for the types)", name);
		for (i = 0; i < o->nkinds; i++)
			if (o->kinds[i] == o->kind)
				return error("invalid -t \"%s\": \"%s\" twice", arg, name);
		if (o->nkinds == OPT_MAX_KINDS)
			return error("invalid -t \"%s\": at most %u types", arg, OPT_MAX_KINDS);
		o->kinds[o->nkinds++] = o->kind;
		if (!end)
			break;
		p = end + 1;
	}
	o->kind = o->kinds[0];
	return 0;
}

static int set_format(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	(void)g, (void)d;
	if (!(o->format = format_find(arg)))
		return error("unknown format \"%s\" (see --help for the formats)", arg);
	return 0;
}

static int set_duration(struct options *o, struct given *g, const struct optdef *d,
			const char *arg)
{
	(void)d;
	if (parse_duration(arg, &o->duration_ns) < 0)
		return error("invalid duration \"%s\": expected a positive number of seconds "
			     "or with a unit, such as 30, 30s, 500ms, 2m or 1h",
			     arg);
	o->duration_given = 1;
	g->timing = 1;
	return 0;
}

static int set_hz(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	uint64_t v;

	(void)d;
	if (parse_uint(arg, OPT_MIN_HZ, OPT_MAX_HZ, 0, &v) < 0)
		return error("invalid frequency \"%s\": expected a whole number of Hz from %u "
			     "to %u",
			     arg, OPT_MIN_HZ, OPT_MAX_HZ);
	o->hz = (unsigned)v;
	g->hz = 1;
	return 0;
}

static int set_sampler(struct options *o, struct given *g, const struct optdef *d,
		       const char *arg)
{
	unsigned i, n = sizeof(sampler_names) / sizeof(sampler_names[0]);

	(void)d;
	for (i = 0; i < n && strcmp(arg, sampler_names[i]); i++)
		;
	if (i == n)
		return error("unknown sampler \"%s\": expected auto, perf or ptrace", arg);
	o->sampler = (enum sampler_wish)i;
	g->sampler = 1;
	return 0;
}

static int set_output(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	(void)g, (void)d;
	if (!*arg)
		return error("invalid output \"\": expected a file name or -");
	o->output = arg;
	return 0;
}

static int set_every(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	(void)g, (void)d;
	if (parse_duration(arg, &o->every_ns) < 0)
		return error("invalid period \"%s\" for --every: expected a positive number of "
			     "seconds or with a unit, such as 10s or 5m",
			     arg);
	return 0;
}

/* --interval DUR (top): each interval's capture, and the refresh. */
static int set_interval(struct options *o, struct given *g, const struct optdef *d,
			const char *arg)
{
	(void)g, (void)d;
	if (parse_duration(arg, &o->every_ns) < 0 || o->every_ns < OPT_MIN_INTERVAL_NS)
		return error("invalid --interval \"%s\": expected a duration of 100ms or more, "
			     "such as 1s or 500ms",
			     arg);
	return 0;
}

static int set_count(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	uint64_t v;

	(void)d;
	if (parse_uint(arg, 0, 1000000000, 0, &v) < 0)
		return error("invalid count \"%s\": expected a whole number (0: until "
			     "interrupted)",
			     arg);
	o->count = (unsigned)v;
	g->count = 1;
	return 0;
}

static int set_summary(struct options *o, struct given *g, const struct optdef *d,
		       const char *arg)
{
	(void)g, (void)d;
	if (strcmp(arg, "json") != 0)
		return error("unknown summary \"%s\": expected json", arg);
	o->summary_json = 1;
	return 0;
}

static int set_stack(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	uint64_t v;

	(void)g, (void)d;
	if (parse_uint(arg, OPT_MIN_STACK, OPT_MAX_STACK, 1, &v) < 0)
		return error("invalid stack size \"%s\": expected 4K to 1M", arg);
	o->stack_cap = (size_t)v;
	o->stack_given = 1;
	return 0;
}

/* --group-by KEY[,KEY...]: at most FOLDED_MAX_GROUP distinct, non-empty keys. */
static int set_group_by(struct options *o, struct given *g, const struct optdef *d,
			const char *arg)
{
	const char *p = arg, *end;
	size_t n = 0, len, i;

	(void)g, (void)d;
	for (;;) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (!len)
			return error("invalid --group-by \"%s\": an empty label key", arg);
		if (len > OPTIONS_MAX_KEY)
			return error("invalid --group-by \"%s\": a key longer than %d bytes", arg,
				     OPTIONS_MAX_KEY);
		if (n == FOLDED_MAX_GROUP)
			return error("invalid --group-by \"%s\": at most %d keys", arg,
				     FOLDED_MAX_GROUP);
		memcpy(o->group_keys[n], p, len);
		o->group_keys[n][len] = 0;
		for (i = 0; i < n; i++)
			if (!strcmp(o->group_keys[i], o->group_keys[n]))
				return error("invalid --group-by \"%s\": \"%s\" twice", arg,
					     o->group_keys[n]);
		o->group_by[n] = o->group_keys[n];
		n++;
		if (!end)
			break;
		p = end + 1;
	}
	o->group_by[n] = NULL;
	return 0;
}

/* --top[=N]: N functions, 1..OPT_MAX_TOP, default OPT_TOP_N. */
static int set_top(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	uint64_t v = OPT_TOP_N;

	(void)g, (void)d;
	if (arg && parse_uint(arg, 1, OPT_MAX_TOP, 0, &v) < 0)
		return error("invalid --top \"%s\": expected a number of functions from 1 to %u",
			     arg, OPT_MAX_TOP);
	o->top = (unsigned)v;
	return 0;
}

/* --debug-dir DIR, repeatable: an existing directory. */
static int set_debug_dir(struct options *o, struct given *g, const struct optdef *d,
			 const char *arg)
{
	struct stat st;

	(void)g, (void)d;
	if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode))
		return error("invalid --debug-dir \"%s\": not a directory", arg);
	if (o->ndebug_dirs == OPTIONS_MAX_DEBUG_DIRS)
		return error("too many --debug-dir: at most %d", OPTIONS_MAX_DEBUG_DIRS);
	o->debug_dirs[o->ndebug_dirs++] = arg;
	return 0;
}

/* A flag: the int field of struct options the row names. */
static int set_flag(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	(void)arg;
	switch (d->key) {
	case OPT_STATS: o->stats = 1; break;
	case OPT_CHILDREN: o->children = 1; break;
	case OPT_NO_LINES: o->no_lines = 1; break;
	case OPT_NO_LINE_CACHE: o->no_line_cache = 1; break;
	case OPT_NO_KERNEL: o->no_kernel = 1; break;
	case OPT_LINES: o->frame_lines = 1; break;
	case OPT_INJECT: o->inject = 1; break;
	case OPT_EJECT: o->eject = 1; break;
	case OPT_WAKER_STACKS: o->waker_stacks = 1; g->waits = "--waker-stacks"; break;
	case 'q': o->quiet = 1; break;
	}
	return 0;
}

/* --inject-rate BYTES, --inject-deadline DUR. */
static int set_inject(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	uint64_t v;

	(void)g;
	if (d->key == OPT_INJECT_RATE) {
		if (parse_uint(arg, 1, 1ull << 40, 1, &v) < 0)
			return error("invalid --inject-rate \"%s\": expected bytes (64K, 512K)", arg);
		o->inject_rate = v;
		return 0;
	}
	if (parse_duration(arg, &v) < 0 || v < 1000000ull || v > 600000000000ull)
		return error("invalid --inject-deadline \"%s\": expected a duration, 1ms..10m", arg);
	o->inject_deadline_ms = v / 1000000ull;
	return 0;
}

static int set_help(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	(void)o, (void)g, (void)d, (void)arg;
	return OPTSET_HELP;
}

static int set_version(struct options *o, struct given *g, const struct optdef *d,
		       const char *arg)
{
	(void)o, (void)g, (void)d, (void)arg;
	printf("cprof-attach %s\n", CPROF_VERSION);
	return 1;
}

/* The --push options into o->push; g->push_only names one that needs --push. */
static int set_push(struct options *o, struct given *g, const struct optdef *d, const char *arg)
{
	struct push_options *po = &o->push;
	uint64_t v;

	if (d->key != OPT_PUSH)
		g->push_only = d->name;
	switch (d->key) {
	case OPT_PUSH:
		if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0)
			return error("invalid push URL: expected http://HOST[:PORT] or "
				     "https://...");
		po->url = arg;
		break;
	case OPT_APP:
		po->app = arg;
		break;
	case OPT_LABEL:
		if (push_label_check(arg) < 0)
			return -1;
		if (po->nlabels == PUSH_LABELS_MAX)
			return error("too many labels: at most %u", PUSH_LABELS_MAX);
		po->labels[po->nlabels++] = arg;
		break;
	case OPT_SPOOL:
		if (!*arg)
			return error("invalid spool directory \"\"");
		po->spool = arg;
		break;
	case OPT_SPOOL_MAX:
		if (parse_uint(arg, 1024, 1ull << 40, 1, &v) < 0)
			return error("invalid spool size \"%s\": expected bytes, 1K or more, "
				     "such as 100M",
				     arg);
		po->spool_max = v;
		break;
	case OPT_PUSH_TIMEOUT:
		if (parse_duration(arg, &po->timeout_ns) < 0 || po->timeout_ns < 1000000)
			return error("invalid push timeout \"%s\": expected a duration of 1ms "
				     "or more, such as 10s",
				     arg);
		break;
	case OPT_TENANT:
		po->tenant = arg;
		break;
	case OPT_BASIC_AUTH:
		/* Never echoed: the message does not quote the value. */
		if (!strchr(arg, ':') || arg[0] == ':')
			return error("invalid --basic-auth: expected USER:PASSWORD");
		po->basic_auth = arg;
		break;
	case OPT_BEARER_TOKEN:
		if (!*arg)
			return error("invalid --bearer-token: empty");
		po->token = arg;
		break;
	}
	return 0;
}

static void more_types(FILE *f)
{
	const struct kind *k;
	unsigned i, n;

	k = kind_all(&n);
	for (i = 0; i < n; i++)
		fprintf(f, "%*s  %-12s %s\n", OPTABLE_HELP_COL, "", k[i].name, k[i].help);
}

static void more_formats(FILE *f)
{
	const struct kind *k;
	const struct format *fm;
	unsigned i, j, n, nf;

	k = kind_all(&n);
	fm = format_all(&nf);
	for (j = 0; j < nf; j++) {
		unsigned all = 1;

		fprintf(f, "%*s  %-7s %s\n", OPTABLE_HELP_COL, "", fm[j].name, fm[j].help);
		for (i = 0; i < n; i++)
			all &= !!(k[i].formats & fm[j].bit);
		if (all)
			continue;
		fprintf(f, "%*s          (only", OPTABLE_HELP_COL, "");
		for (i = 0; i < n; i++)
			if (k[i].formats & fm[j].bit)
				fprintf(f, " %s", k[i].name);
		fprintf(f, ")\n");
	}
}

static void more_samplers(FILE *f)
{
	static const char *const lines[] = {
		"perf    the kernel samples running threads (perf_event_open):",
		"        nothing is stopped; sees threads of any life span",
		"        with CAP_PERFMON, root or perf_event_paranoid <= 0",
		"ptrace  stop each running thread for a moment and copy it",
		"auto    perf where the kernel allows it, else ptrace;",
		"        the choice and why are on the capture line",
	};
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		fprintf(f, "%*s  %s\n", OPTABLE_HELP_COL, "", lines[i]);
}

static const struct optdef rows[] = {
	{ "pid", 'p', "PID", set_pid, "process to profile (required)", NULL, NULL, OPTGROUP_MAIN },
	{ "type", 't', "TYPE", set_type,
	  "profile type (default cpu; run: several, comma-\n"
	  "separated, one file each), one of:",
	  NULL, more_types,
	  OPTGROUP_MAIN },
	{ "format", OPT_FORMAT, "FORMAT", set_format, "how to write it, one of:", NULL,
	  more_formats, OPTGROUP_MAIN },
	{ "duration", 'd', "DUR", set_duration,
	  "how long to sample: 30s, 500ms, 2m, 1h, 1m30s, or\n"
	  "seconds alone: 30 (default 30s); for %K:\n"
	  "report the change over DUR instead of the totals since\n"
	  "the program started",
	  is_delta, NULL, OPTGROUP_MAIN },
	{ "frequency", 'F', "HZ", set_hz,
	  "%K: samples per second per thread,\n"
	  "1..10000 (default 100)",
	  takes_hz, NULL, OPTGROUP_MAIN },
	{ "sampler", OPT_SAMPLER, "WHICH", set_sampler, "%K: how samples are taken (default auto):",
	  takes_sampler, more_samplers, OPTGROUP_MAIN },
	{ "output", 'o', "FILE", set_output,
	  "where to write the profile; - for standard output\n"
	  "(not a pprof profile to a terminal)\n"
	  "(default: cprof-PID-TYPE-YYYYmmddTHHMMSSZ.pb.gz here,\n"
	  "its name printed on stderr); FILE may hold %p (pid),\n"
	  "%t (UTC start, YYYYmmddTHHMMSSZ), %n (capture number,\n"
	  "from 1), %T (type), %% (a %); with --every it must hold\n"
	  "%n or %t",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "every", OPT_EVERY, "DUR", set_every,
	  "capture again every DUR (a window of DUR unless -d says less)", NULL, NULL,
	  OPTGROUP_MAIN },
	{ "count", OPT_COUNT, "N", set_count,
	  "with --every: this many captures; top: this many\n"
	  "intervals (default 0: until interrupted)",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "interval", OPT_INTERVAL, "DUR", set_interval,
	  "top: capture and refresh every DUR, 100ms or more\n"
	  "(default 1s)",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "summary", OPT_SUMMARY, "json", set_summary,
	  "print one JSON line per capture on stdout (on stderr\n"
	  "with -o -): path, type, pid, capture, exit, samples,\n"
	  "lost, duration_s, threads, start_ns, partial,\n"
	  "label_keys, kernel_stacks (cpu: also sampler,\n"
	  "sampler_reason; offcpu: switches, waits_no_stack,\n"
	  "lost_stacks, waits_unpicked, woken, states; --push:\n"
	  "push, and push_reason when dropped)",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "top", OPT_TOP, "[N]", set_top,
	  "print the N (default 10) top functions after each\n"
	  "capture, on stdout (stderr when stdout has the profile\n"
	  "or the --summary lines), with -q too; without it they\n"
	  "are printed when stderr is a terminal and -q is not given",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "stack-size", OPT_STACK, "BYTES", set_stack,
	  "stack bytes copied per sample, 4K..1M (default 64K);\n"
	  "a handler on an alternate signal stack: both stacks;\n"
	  "perf events copy at most 65528",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "children", OPT_CHILDREN, NULL, set_flag,
	  "also every descendant process, present and new, into\n"
	  "the same profile, labelled pid and process (%K)",
	  takes_children, NULL, OPTGROUP_MAIN },
	{ "no-lines", OPT_NO_LINES, NULL, set_flag,
	  "function names only: no source lines or inlined frames\n"
	  "from debug information (the fastest write)",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "no-kernel", OPT_NO_KERNEL, NULL, set_flag,
	  "no kernel frames (as root: cpu with perf events, each\n"
	  "sample's kernel call chain; threads and wall, the\n"
	  "kernel stack a sleeping thread is blocked in)",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "min-wait", OPT_MIN_WAIT, "DUR", set_min_wait,
	  "%K: waits shorter than DUR (100us, 1ms) are not\n"
	  "samples of their own: each thread's go to one frame,\n"
	  "\"[waits under N us]\", with their count and total\n"
	  "(default: every wait is a sample)",
	  takes_waits, NULL, OPTGROUP_MAIN },
	{ "waker-stacks", OPT_WAKER_STACKS, NULL, set_flag,
	  "%K: above each wait's stack, a \"[woken by]\" frame\n"
	  "and the stack of the thread that woke it, as root\n"
	  "frames (the waker label names it in any case)",
	  takes_waits, NULL, OPTGROUP_MAIN },
	{ "debug-dir", OPT_DEBUG_DIR, "DIR", set_debug_dir,
	  "also look for debug files here, by build ID\n"
	  "(DIR/.build-id/xx/rest.debug, DIR/NAME.debug, DIR/NAME)\n"
	  "and by debug link (DIR/LINK); each must match the\n"
	  "object's build ID or CRC; repeatable (for a machine\n"
	  "without network: copy the symbols beside the profile)",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "no-line-cache", OPT_NO_LINE_CACHE, NULL, set_flag,
	  "look every source line up in the debug information;\n"
	  "neither read nor add to the cache of lines by build\n"
	  "ID ($XDG_CACHE_HOME/cprof/lines or ~/.cache/cprof/lines)",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "lines", OPT_LINES, NULL, set_flag,
	  "folded and svg: one frame per source line,\n"
	  "\"function (file:line)\"",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "group-by", OPT_GROUP_BY, "KEYS", set_group_by,
	  "folded and svg: the values of these sample labels\n"
	  "(comma-separated, at most 4: thread, tid, state,\n"
	  "syscall, pid, process, waker, or the program's own)\n"
	  "as the root frames, \"KEY=VALUE\" or \"[no KEY]\"",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "inject", OPT_INJECT, NULL, set_flag,
	  "heap, allocs, mutex, block: load libcprof.so into a\n"
	  "process not started with it (by ptrace, on one thread\n"
	  "stopped for the call), record from now on, disarm it\n"
	  "at the end (it stays loaded, dormant); a window of\n"
	  "-d (default 30s) from the injection",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "eject", OPT_EJECT, NULL, set_flag,
	  "disarm a libcprof.so that --inject armed, and exit",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "inject-rate", OPT_INJECT_RATE, "BYTES", set_inject,
	  "with --inject: mean bytes allocated between heap\n"
	  "samples (default the shim's, 512K)",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "inject-deadline", OPT_INJECT_DEADLINE, "DUR", set_inject,
	  "with --inject or --eject: how long to wait for a\n"
	  "thread that may take the call, and for the call\n"
	  "(default 5s); then exit 3 with the reason",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "stats", OPT_STATS, NULL, set_flag,
	  "print the sampler chosen and why, and the profiler's\n"
	  "own costs, on stderr",
	  NULL, NULL, OPTGROUP_MAIN },
	{ "quiet", 'q', NULL, set_flag, "print only errors", NULL, NULL, OPTGROUP_MAIN },
	{ "help", 'h', NULL, set_help, "this help", NULL, NULL, OPTGROUP_MAIN },
	{ "version", 'V', NULL, set_version, "the version", NULL, NULL, OPTGROUP_MAIN },
	{ "push", OPT_PUSH, "URL", set_push,
	  "send each capture to the Pyroscope server at URL\n"
	  "(http(s)://HOST:PORT, its /ingest API); without -o\n"
	  "no local file is written",
	  NULL, NULL, OPTGROUP_PUSH },
	{ "app", OPT_APP, "NAME", set_push, "the application name (default: the executable's name)",
	  NULL, NULL, OPTGROUP_PUSH },
	{ "label", OPT_LABEL, "KEY=VALUE", set_push,
	  "a label of the series (repeatable); hostname and pid\n"
	  "are added unless given",
	  NULL, NULL, OPTGROUP_PUSH },
	{ "spool", OPT_SPOOL, "DIR", set_push,
	  "where profiles wait until the server takes them\n"
	  "(default $XDG_CACHE_HOME/cprof/spool, ~/.cache/cprof/spool,\n"
	  "or /var/cache/cprof/spool for root without a home);\n"
	  "the next run sends what is left",
	  NULL, NULL, OPTGROUP_PUSH },
	{ "spool-max", OPT_SPOOL_MAX, "BYTES", set_push,
	  "the spool's cap, oldest dropped first (default 100M)", NULL, NULL, OPTGROUP_PUSH },
	{ "push-timeout", OPT_PUSH_TIMEOUT, "DUR", set_push, "one request's limit (default 10s)",
	  NULL, NULL, OPTGROUP_PUSH },
	{ "tenant", OPT_TENANT, "ID", set_push, "X-Scope-OrgID (or CPROF_PUSH_TENANT)", NULL, NULL,
	  OPTGROUP_PUSH },
	{ "basic-auth", OPT_BASIC_AUTH, "USER:PASSWORD", set_push,
	  "basic authentication; better from the environment:\n"
	  "CPROF_PUSH_BASIC_AUTH",
	  NULL, NULL, OPTGROUP_PUSH },
	{ "bearer-token", OPT_BEARER_TOKEN, "TOKEN", set_push,
	  "bearer authentication; better from the environment:\n"
	  "CPROF_PUSH_BEARER_TOKEN",
	  NULL, NULL, OPTGROUP_PUSH },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))
_Static_assert(NROWS <= OPTABLE_ROWS_MAX, "optable.h: OPTABLE_ROWS_MAX");

const struct optdef *optable_all(unsigned *n)
{
	*n = NROWS;
	return rows;
}

const struct optdef *optable_find(int key)
{
	size_t i;

	for (i = 0; i < NROWS; i++)
		if (rows[i].key == key)
			return &rows[i];
	return NULL;
}

void optable_getopt(struct option *longs, char *shorts)
{
	size_t i, s = 0;

	shorts[s++] = ':';
	for (i = 0; i < NROWS; i++) {
		longs[i].name = rows[i].name;
		longs[i].has_arg = !rows[i].arg ? no_argument
				   : rows[i].arg[0] == '[' ? optional_argument : required_argument;
		longs[i].flag = NULL;
		longs[i].val = rows[i].key;
		if (rows[i].key < 256) {
			shorts[s++] = (char)rows[i].key;
			if (rows[i].arg)
				shorts[s++] = ':';
			if (rows[i].arg && rows[i].arg[0] == '[')
				shorts[s++] = ':';
		}
	}
	memset(&longs[NROWS], 0, sizeof(longs[NROWS]));
	shorts[s] = 0;
}
