/*
 * options.c — getopt_long over a table of options, --help generated from
 * the same facts, and strict value parsers: a profiler run by a script must
 * fail loudly on "-d 30" rather than capture for 30 nanoseconds.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/kinds/kinds.h"
#include "attach/cli/options.h"
#include "attach/push/label.h"
#include "common/err.h"

#ifndef CPROF_VERSION
#define CPROF_VERSION "0.1"
#endif

static const struct {
	const char *name;
	uint64_t ns;
} units[] = {
	{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
	{ "s", 1000000000ull }, { "m", 60000000000ull }, { "h", 3600000000000ull },
};

int parse_duration(const char *s, uint64_t *out)
{
	long double total = 0;
	const char *p = s;

	if (!s || !*s)
		return -1;
	while (*p) {
		long double v = 0, scale = 1;
		int digits = 0;
		size_t i, best = 0, len;

		while (*p >= '0' && *p <= '9') {
			v = v * 10 + (*p++ - '0');
			digits++;
		}
		if (*p == '.') {
			p++;
			while (*p >= '0' && *p <= '9') {
				scale /= 10;
				v += (*p++ - '0') * scale;
				digits++;
			}
		}
		if (!digits)
			return -1;
		/* The longest unit that matches: "ms" before "m". */
		for (i = 0, len = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t l = strlen(units[i].name);

			if (l > len && !strncmp(p, units[i].name, l)) {
				best = i;
				len = l;
			}
		}
		if (!len)
			return -1;
		p += len;
		total += v * units[best].ns;
		if (total > OPT_MAX_DURATION_NS)
			return -1;
	}
	if (total < 1)
		return -1;
	*out = (uint64_t)total;
	return 0;
}

int parse_uint(const char *s, uint64_t min, uint64_t max, int sizes, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !(*s >= '0' && *s <= '9'))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (sizes && (*end == 'K' || *end == 'k')) {
		if (v > ULLONG_MAX / 1024)
			return -1;
		v *= 1024;
		end++;
	} else if (sizes && (*end == 'M' || *end == 'm')) {
		if (v > ULLONG_MAX / (1024 * 1024))
			return -1;
		v *= 1024 * 1024;
		end++;
	}
	if (*end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* The names of the kinds for which want(k) holds, as "a, b, c" (for help and messages). */
static void kinds_named(FILE *f, int (*want)(const struct kind *))
{
	const struct kind *k;
	unsigned i, n, shown = 0;

	k = kind_all(&n);
	for (i = 0; i < n; i++)
		if (want(&k[i]))
			fprintf(f, "%s%s", shown++ ? ", " : "", k[i].name);
}

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

static const char *const sampler_names[] = {
	[SAMPLER_AUTO] = "auto", [SAMPLER_PERF] = "perf", [SAMPLER_PTRACE] = "ptrace",
};

static void usage(FILE *f)
{
	const struct kind *k;
	const struct format *fm;
	unsigned i, j, n, nf;

	fprintf(f,
		"usage: cprof-attach -p PID [-t TYPE] [-d DURATION] [-F HZ] [-o FILE] [options]\n"
		"\n"
		"Attach to a running process from outside (ptrace, or for cpu profiles the\n"
		"kernel's perf events), sample its threads, detach, and write a pprof\n"
		"profile (gzip-compressed profile.proto) that `go tool pprof` and `pprof`\n"
		"read. The target keeps running throughout; no thread is left stopped,\n"
		"whatever happens to cprof-attach.\n"
		"\n"
		"options:\n"
		"  -p, --pid PID          process to profile (required)\n"
		"  -t, --type TYPE        profile type (default cpu), one of:\n");
	k = kind_all(&n);
	for (i = 0; i < n; i++)
		fprintf(f, "                           %-12s %s\n", k[i].name, k[i].help);
	fprintf(f, "      --format FORMAT    how to write it, one of:\n");
	fm = format_all(&nf);
	for (j = 0; j < nf; j++) {
		unsigned all = 1;

		fprintf(f, "                           %-7s %s\n", fm[j].name, fm[j].help);
		for (i = 0; i < n; i++)
			all &= !!(k[i].formats & fm[j].bit);
		if (all)
			continue;
		fprintf(f, "                                   (only");
		for (i = 0; i < n; i++)
			if (k[i].formats & fm[j].bit)
				fprintf(f, " %s", k[i].name);
		fprintf(f, ")\n");
	}
	fprintf(f, "  -d, --duration DUR     how long to sample: 30s, 500ms, 2m, 1h, 1m30s (default 30s);\n"
		   "                         for ");
	kinds_named(f, is_delta);
	fprintf(f, ":\n"
		   "                         report the change over DUR instead of the totals since\n"
		   "                         the program started\n");
	fprintf(f, "  -F, --frequency HZ     ");
	kinds_named(f, takes_hz);
	fprintf(f, ": samples per second per thread,\n"
		   "                         %u..%u (default 100)\n", OPT_MIN_HZ, OPT_MAX_HZ);
	fprintf(f, "      --sampler WHICH    ");
	kinds_named(f, takes_sampler);
	fprintf(f, ": how samples are taken (default auto):\n"
		   "                           perf    the kernel samples running threads (perf_event_open):\n"
		   "                                   nothing is stopped; sees threads of any life span\n"
		   "                                   with CAP_PERFMON, root or perf_event_paranoid <= 0\n"
		   "                           ptrace  stop each running thread for a moment and copy it\n"
		   "                           auto    perf where the kernel allows it, else ptrace;\n"
		   "                                   the choice and why are on the capture line\n");
	fprintf(f,

		"  -o, --output FILE      where to write the profile; - for standard output\n"
		"                         (default: cprof-PID-TYPE-YYYYmmddTHHMMSSZ.pb.gz here,\n"
		"                         its name printed on stderr)\n"
		"      --every DUR        capture again every DUR (a window of DUR unless -d says less)\n"
		"      --count N          with --every: this many captures (default 0: until\n"
		"                         interrupted)\n"
		"                         FILE may hold %%p (pid), %%t (UTC start, YYYYmmddTHHMMSSZ),\n"
		"                         %%n (capture number, from 1), %%T (type), %%%% (a %%);\n"
		"                         with --every it must hold %%n or %%t\n"
		"      --summary json     print one JSON line per capture on stdout (on stderr\n"
		"                         with -o -): path, type, pid, capture, exit, samples,\n"
		"                         lost, duration_s, threads, start_ns, partial,\n"
		"                         label_keys (cpu: also sampler, sampler_reason;\n"
		"                         --push: push, and push_reason when dropped)\n"
		"      --top              print the top functions after a capture even when\n"
		"                         stderr is not a terminal (on a terminal they are)\n"
		"      --stack-size BYTES stack bytes copied per sample, 4K..1M (default 64K);\n"
		"                         a handler on an alternate signal stack: both stacks;\n"
		"                         perf events copy at most 65528\n"
		"      --children         also every descendant process, present and new, into\n"
		"                         the same profile, labelled pid and process (");
	kinds_named(f, takes_children);
	fprintf(f, ")\n"
		"      --no-lines         function names only: no source lines or inlined frames\n"
		"                         from debug information (the fastest write)\n"
		"      --no-kernel        no kernel frames (as root: cpu with perf events, each\n"
		"                         sample's kernel call chain; threads and wall, the\n"
		"                         kernel stack a sleeping thread is blocked in)\n"
		"      --no-line-cache    look every source line up in the debug information;\n"
		"                         neither read nor add to the cache of lines by build\n"
		"                         ID ($XDG_CACHE_HOME/cprof/lines or ~/.cache/cprof/lines)\n"
		"      --lines            folded and svg: one frame per source line,\n"
		"                         \"function (file:line)\"\n"
		"      --group-by KEYS    folded and svg: the values of these sample labels\n"
		"                         (comma-separated, at most 4: thread, tid, state,\n"
		"                         syscall, pid, process, or the program's own) as the\n"
		"                         root frames, \"KEY=VALUE\" or \"[no KEY]\"\n"
		"      --stats            print the sampler chosen and why, and the profiler's\n"
		"                         own costs, on stderr\n"
		"  -q, --quiet            print only errors\n"
		"  -h, --help             this help\n"
		"  -V, --version          the version\n"
		"\n"
		"pushing to Grafana Pyroscope (pprof only; see the README's fleet recipe):\n"
		"      --push URL         send each capture to the Pyroscope server at URL\n"
		"                         (http(s)://HOST:PORT, its /ingest API); without -o\n"
		"                         no local file is written\n"
		"      --app NAME         the application name (default: the executable's name)\n"
		"      --label KEY=VALUE  a label of the series (repeatable); hostname and pid\n"
		"                         are added unless given\n"
		"      --spool DIR        where profiles wait until the server takes them\n"
		"                         (default $XDG_CACHE_HOME/cprof/spool, ~/.cache/cprof/spool,\n"
		"                         or /var/cache/cprof/spool for root without a home);\n"
		"                         the next run sends what is left\n"
		"      --spool-max BYTES  the spool's cap, oldest dropped first (default 100M)\n"
		"      --push-timeout DUR one request's limit (default 10s)\n"
		"      --tenant ID        X-Scope-OrgID (or CPROF_PUSH_TENANT)\n"
		"      --basic-auth USER:PASSWORD, --bearer-token TOKEN\n"
		"                         authentication; better from the environment:\n"
		"                         CPROF_PUSH_BASIC_AUTH, CPROF_PUSH_BEARER_TOKEN\n"
		"\n"
		"Stop early with Ctrl-C (SIGINT) or SIGTERM: what was collected is written;\n"
		"a second signal ends cprof-attach at once.\n"
		"Files appear atomically: a temporary file is renamed into place.\n"
		"\n"
		"exit codes:\n"
		"  0  success\n"
		"  1  internal error (out of memory, ...)\n"
		"  2  usage error: bad option or value, or --push without libcurl\n"
		"  3  cannot attach: no such process, not permitted, already traced,\n"
		"     a zombie, cprof-attach itself, or (heap types) no libcprof.so in it\n"
		"  4  the target went away before anything was captured\n"
		"  5  partial: the target exited or exec'd during a capture (what was\n"
		"     captured was written), or a series ended early because it went away\n"
		"  6  the profile could not be written\n"
		"  7  --push: the captures succeeded but some profiles were not pushed (they\n"
		"     wait in the spool, or were dropped)\n"
		"  8  interrupted: a stop signal not obeyed within 1 s, a second one, or a\n"
		"     read of the target's memory that did not return; this capture's\n"
		"     profile is not written (never half-written)\n");
}

enum { OPT_STACK = 256, OPT_STATS, OPT_FORMAT, OPT_EVERY, OPT_COUNT, OPT_SUMMARY, OPT_TOP,
       OPT_CHILDREN, OPT_NO_LINES, OPT_NO_LINE_CACHE, OPT_NO_KERNEL, OPT_LINES, OPT_SAMPLER, OPT_GROUP_BY, OPT_PUSH, OPT_APP,
       OPT_LABEL, OPT_SPOOL, OPT_SPOOL_MAX, OPT_PUSH_TIMEOUT, OPT_TENANT, OPT_BASIC_AUTH,
       OPT_BEARER_TOKEN };

static const struct option longopts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "type", required_argument, NULL, 't' },
	{ "duration", required_argument, NULL, 'd' },
	{ "frequency", required_argument, NULL, 'F' },
	{ "output", required_argument, NULL, 'o' },
	{ "stack-size", required_argument, NULL, OPT_STACK },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "every", required_argument, NULL, OPT_EVERY },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "summary", required_argument, NULL, OPT_SUMMARY },
	{ "top", no_argument, NULL, OPT_TOP },
	{ "children", no_argument, NULL, OPT_CHILDREN },
	{ "no-lines", no_argument, NULL, OPT_NO_LINES },
	{ "no-line-cache", no_argument, NULL, OPT_NO_LINE_CACHE },
	{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
	{ "lines", no_argument, NULL, OPT_LINES },
	{ "sampler", required_argument, NULL, OPT_SAMPLER },
	{ "group-by", required_argument, NULL, OPT_GROUP_BY },
	{ "push", required_argument, NULL, OPT_PUSH },
	{ "app", required_argument, NULL, OPT_APP },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "spool", required_argument, NULL, OPT_SPOOL },
	{ "spool-max", required_argument, NULL, OPT_SPOOL_MAX },
	{ "push-timeout", required_argument, NULL, OPT_PUSH_TIMEOUT },
	{ "tenant", required_argument, NULL, OPT_TENANT },
	{ "basic-auth", required_argument, NULL, OPT_BASIC_AUTH },
	{ "bearer-token", required_argument, NULL, OPT_BEARER_TOKEN },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* --group-by KEY[,KEY...]: at most FOLDED_MAX_GROUP distinct, non-empty keys. 0 or -1. */
static int parse_group_by(struct options *o, const char *arg)
{
	const char *p = arg, *end;
	size_t n = 0, len, i;

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

/*
 * One of the --push options (c, its value arg) into po; *push_only names
 * the option when it is one that needs --push. 0, or -1 with a message.
 */
static int parse_push_option(struct push_options *po, int c, const char *arg,
			     const char **push_only)
{
	uint64_t v;

	switch (c) {
	case OPT_PUSH:
		if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0)
			return error("invalid push URL: expected http://HOST[:PORT] or "
				     "https://...");
		po->url = arg;
		break;
	case OPT_APP:
		po->app = arg;
		*push_only = "--app";
		break;
	case OPT_LABEL:
		if (push_label_check(arg) < 0)
			return -1;
		if (po->nlabels == PUSH_LABELS_MAX)
			return error("too many labels: at most %u", PUSH_LABELS_MAX);
		po->labels[po->nlabels++] = arg;
		*push_only = "--label";
		break;
	case OPT_SPOOL:
		if (!*arg)
			return error("invalid spool directory \"\"");
		po->spool = arg;
		*push_only = "--spool";
		break;
	case OPT_SPOOL_MAX:
		if (parse_uint(arg, 1024, 1ull << 40, 1, &v) < 0)
			return error("invalid spool size \"%s\": expected bytes, 1K or more, "
				     "such as 100M",
				     arg);
		po->spool_max = v;
		*push_only = "--spool-max";
		break;
	case OPT_PUSH_TIMEOUT:
		if (parse_duration(arg, &po->timeout_ns) < 0 ||
		    po->timeout_ns < 1000000)
			return error("invalid push timeout \"%s\": expected a duration of 1ms "
				     "or more, such as 10s",
				     arg);
		*push_only = "--push-timeout";
		break;
	case OPT_TENANT:
		po->tenant = arg;
		*push_only = "--tenant";
		break;
	case OPT_BASIC_AUTH:
		/* Never echoed: the message does not quote the value. */
		if (!strchr(arg, ':') || arg[0] == ':')
			return error("invalid --basic-auth: expected USER:PASSWORD");
		po->basic_auth = arg;
		*push_only = "--basic-auth";
		break;
	case OPT_BEARER_TOKEN:
		if (!*arg)
			return error("invalid --bearer-token: empty");
		po->token = arg;
		*push_only = "--bearer-token";
		break;
	}
	return 0;
}

/* What the command line gave, for the checks after it is read. */
struct given {
	int pid, timing, hz, count, sampler;
	const char *push_only; /* an option that needs --push, when one was given */
};

/* The checks across options, and the defaults that depend on others. 0 or -1. */
static int options_check(struct options *o, const struct given *g)
{
	if (!g->pid)
		return error("no target: give the process id with -p PID (see --help)");
	if (g->push_only && !o->push.url)
		return error("option \"%s\" needs --push URL", g->push_only);
	if (o->push.url && o->format->bit != FORMAT_PPROF)
		return error("--push sends pprof: drop --format %s", o->format->name);
	if (o->push.url)
		push_options_env(&o->push);
	if (o->no_lines && o->frame_lines)
		return error("--lines needs source lines: drop --no-lines");
	if (o->frame_lines && !(o->format->bit & (FORMAT_FOLDED | FORMAT_SVG)))
		return error("--lines applies to --format folded and svg (pprof keeps lines anyway: "
			     "go tool pprof -lines)");
	if (o->group_by[0] && !(o->format->bit & (FORMAT_FOLDED | FORMAT_SVG)))
		return error("--group-by applies to --format folded and svg (pprof keeps the "
			     "labels: go tool pprof -tagroot KEY)");
	if (!(o->kind->formats & o->format->bit))
		return error("format \"%s\" is not available for %s profiles (see --help)",
			     o->format->name, o->kind->name);
	if (!o->every_ns) {
		if (g->count && o->count != 1)
			return error("--count needs --every (how often to capture)");
		o->count = 1;
	} else {
		if (!g->count)
			o->count = 0;
		/* A window as long as the period, unless a shorter one was asked for. */
		if (o->kind->duration == DURATION_WINDOW && !o->duration_given)
			o->duration_ns = o->every_ns;
		if (o->duration_given && o->duration_ns > o->every_ns)
			return error("-d (%.3gs) is longer than --every (%.3gs): captures would overlap",
				     (double)o->duration_ns / 1e9, (double)o->every_ns / 1e9);
	}
	o->progress = !o->quiet && isatty(STDERR_FILENO) && o->kind->duration == DURATION_WINDOW;
	if (g->timing && o->kind->duration == DURATION_NONE)
		return error("option \"-d\" does not apply to %s profiles, which are one snapshot",
			     o->kind->name);
	if (o->children && !(kind_takes(o->kind) & KIND_TAKES_CHILDREN))
		return error("option \"--children\" does not apply to %s profiles yet: profile each "
			     "process's segment on its own",
			     o->kind->name);
	if (g->sampler && !(kind_takes(o->kind) & KIND_TAKES_SAMPLER))
		return error("option \"--sampler\" does not apply to %s profiles, whose sampler "
			     "is fixed",
			     o->kind->name);
	if (g->hz && !(kind_takes(o->kind) & KIND_TAKES_HZ))
		return error("option \"-F\" does not apply to %s profiles, which are not sampled "
			     "by time",
			     o->kind->name);
	return 0;
}

int options_parse(struct options *o, int argc, char **argv)
{
	struct given g = { 0 };
	uint64_t v;
	unsigned i;
	int c;

	memset(o, 0, sizeof(*o));
	o->duration_ns = 30ull * 1000000000ull;
	o->hz = 100;
	o->kind = kind_find("cpu");
	o->stack_cap = 64 * 1024;
	o->format = format_find("pprof");
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":p:t:d:F:o:qhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_uint(optarg, 1, INT_MAX, 0, &v) < 0)
				return error("invalid pid \"%s\": expected a process id", optarg);
			o->pid = (pid_t)v;
			g.pid = 1;
			break;
		case 't':
			o->kind = kind_find(optarg);
			if (!o->kind)
				return error("unknown profile type \"%s\" (see --help for the types)",
					     optarg);
			break;
		case 'd':
			if (parse_duration(optarg, &o->duration_ns) < 0)
				return error("invalid duration \"%s\": expected a positive number "
					     "with a unit, such as 30s, 500ms, 2m or 1h",
					     optarg);
			o->duration_given = 1;
			g.timing = 1;
			break;
		case 'F':
			if (parse_uint(optarg, OPT_MIN_HZ, OPT_MAX_HZ, 0, &v) < 0)
				return error("invalid frequency \"%s\": expected a whole number of "
					     "Hz from %u to %u",
					     optarg, OPT_MIN_HZ, OPT_MAX_HZ);
			o->hz = (unsigned)v;
			g.hz = 1;
			break;
		case 'o':
			if (!*optarg)
				return error("invalid output \"\": expected a file name or -");
			o->output = optarg;
			break;
		case OPT_STACK:
			if (parse_uint(optarg, OPT_MIN_STACK, OPT_MAX_STACK, 1, &v) < 0)
				return error("invalid stack size \"%s\": expected 4K to 1M", optarg);
			o->stack_cap = (size_t)v;
			o->stack_given = 1;
			break;
		case OPT_SAMPLER:
			for (i = 0; i < sizeof(sampler_names) / sizeof(sampler_names[0]); i++)
				if (!strcmp(optarg, sampler_names[i]))
					break;
			if (i == sizeof(sampler_names) / sizeof(sampler_names[0]))
				return error("unknown sampler \"%s\": expected auto, perf or ptrace",
					     optarg);
			o->sampler = (enum sampler_wish)i;
			g.sampler = 1;
			break;
		case OPT_STATS:
			o->stats = 1;
			break;
		case OPT_EVERY:
			if (parse_duration(optarg, &o->every_ns) < 0)
				return error("invalid period \"%s\" for --every: expected a positive "
					     "number with a unit, such as 10s or 5m",
					     optarg);
			break;
		case OPT_COUNT:
			if (parse_uint(optarg, 0, 1000000000, 0, &v) < 0)
				return error("invalid count \"%s\": expected a whole number (0: until "
					     "interrupted)",
					     optarg);
			o->count = (unsigned)v;
			g.count = 1;
			break;
		case OPT_SUMMARY:
			if (strcmp(optarg, "json") != 0)
				return error("unknown summary \"%s\": expected json", optarg);
			o->summary_json = 1;
			break;
		case OPT_TOP:
			o->top = 1;
			break;
		case OPT_CHILDREN:
			o->children = 1;
			break;
		case OPT_NO_LINES:
			o->no_lines = 1;
			break;
		case OPT_NO_LINE_CACHE:
			o->no_line_cache = 1;
			break;
		case OPT_NO_KERNEL:
			o->no_kernel = 1;
			break;
		case OPT_LINES:
			o->frame_lines = 1;
			break;
		case OPT_GROUP_BY:
			if (parse_group_by(o, optarg) < 0)
				return -1;
			break;
		case OPT_FORMAT:
			o->format = format_find(optarg);
			if (!o->format)
				return error("unknown format \"%s\" (see --help for the formats)",
					     optarg);
			break;
		case OPT_PUSH:
		case OPT_APP:
		case OPT_LABEL:
		case OPT_SPOOL:
		case OPT_SPOOL_MAX:
		case OPT_PUSH_TIMEOUT:
		case OPT_TENANT:
		case OPT_BASIC_AUTH:
		case OPT_BEARER_TOKEN:
			if (parse_push_option(&o->push, c, optarg, &g.push_only) < 0)
				return -1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("cprof-attach %s\n", CPROF_VERSION);
			return 1;
		case ':':
			if (optopt)
				return error("option \"-%c\" needs a value (see --help)", optopt);
			return error("option \"%s\" needs a value (see --help)", argv[optind - 1]);
		default:
			if (optopt)
				return error("unknown option \"-%c\" (see --help)", optopt);
			return error("unknown option \"%s\" (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return error("unexpected argument \"%s\" (see --help)", argv[optind]);
	return options_check(o, &g);
}
