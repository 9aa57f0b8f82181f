/*
 * options.c — the checks across options, once the line is read (optable.c
 * reads it), and strict value parsers: a value that does not parse is an
 * error, never a guess ("-d 30" is 30 seconds, as sleep and timeout read
 * it; "-d 30x" is refused).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/kinds/kinds.h"
#include "attach/cli/commands.h"
#include "attach/cli/options.h"
#include "attach/kinds/formats.h"
#include "attach/push/label.h"
#include "common/err.h"

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
		/* A bare number, alone, is seconds. */
		if (!len && (*p || p != s + strspn(s, "0123456789.")))
			return -1;
		if (!len)
			best = 3; /* units[3], "s" */
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

/* options_check() (options.h): every rule that involves more than one option. */
/*
 * run: a command line and types run can take; each type's formats. -d is
 * the run's window whatever the types, and -F, --sampler, --children and
 * the offcpu options need one type that takes them (that one uses them).
 */
static int options_check_run(struct options *o, struct given *g)
{
	unsigned i, takes = 0;

	if (!o->cmd || !o->cmd[0])
		return error("no command to run: give it after the options, "
			     "run [options] -- CMD [ARGS...] (see run --help)");
	if (!o->nkinds)
		o->kinds[o->nkinds++] = o->kind;
	for (i = 0; i < o->nkinds; i++) {
		const struct kind *k = o->kinds[i];

		if (k->duration == DURATION_NONE)
			return error("run does not take -t %s, one snapshot of a running process "
				     "(use dump -p PID)", k->name);
		if (!(k->formats & o->format->bit))
			return error("format \"%s\" is not available for %s profiles (see --help)",
				     o->format->name, k->name);
		takes |= kind_takes(k);
	}
	if (o->nkinds > 1 && o->output && !strcmp(o->output, "-"))
		return error("-o - takes one profile: give -o FILE with several types "
			     "(one file each)");
	if (o->children && !(takes & KIND_TAKES_CHILDREN))
		return error("option \"--children\" applies to none of these types");
	if (g->sampler && !(takes & KIND_TAKES_SAMPLER))
		return error("option \"--sampler\" applies to none of these types");
	if (g->waits && !(takes & KIND_TAKES_WAITS))
		return error("option \"%s\" applies only to -t offcpu", g->waits);
	if (g->hz && !(takes & KIND_TAKES_HZ))
		return error("option \"-F\" applies to none of these types");
	/* Each type's own checks below see the first type, and no -d (the run's, not theirs). */
	g->timing = 0;
	g->hz = g->sampler = 0;
	g->waits = NULL;
	o->children = 0;
	return 0;
}

/* Whether kind k may be injected for: the shim's allocation and lock families. */
static int injectable(const struct kind *k)
{
	static const char *const names[] = { "heap", "allocs", "mutex", "block" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(k->name, names[i]))
			return 1;
	return 0;
}

/* --inject, --eject and their companions. 0 or -1. */
static int options_check_inject(struct options *o)
{
	if ((o->inject_rate || o->inject_deadline_ms) && !o->inject && !o->eject)
		return error("options \"--inject-rate\" and \"--inject-deadline\" need --inject or --eject");
	if (o->inject && o->eject)
		return error("--inject arms libcprof.so for a capture and disarms it at the end; "
			     "--eject only disarms: give one");
	if (o->eject)
		return 0;
	if (!o->inject)
		return 0;
	if (o->command->launches || o->command->run)
		return error("--inject applies to record (-p PID), not to %s", o->command->name);
	if (!injectable(o->kind))
		return error("--inject applies to -t heap, allocs, mutex and block, not to %s",
			     o->kind->name);
	if (o->children)
		return error("--inject loads libcprof.so into one process: drop --children");
	/* A snapshot the moment after the arm holds nothing: a window, 30 s unless -d says. */
	if (!o->duration_given && o->every_ns && o->duration_ns > o->every_ns)
		o->duration_ns = o->every_ns;
	o->duration_given = 1;
	return 0;
}

int options_check(struct options *o, const struct given *gin)
{
	struct given gr = *gin, *g = &gr;
	int children = o->children;

	if (o->command->launches) {
		if (options_check_run(o, g) < 0)
			return -1;
	} else if (o->nkinds > 1) {
		return error("several types at once are for run; record takes one -t");
	} else if (!g->pid) {
		return error("no target: give the process id with -p PID (see --help)");
	}
	if (g->push_only && !o->push.url)
		return error("option \"--%s\" needs --push URL", g->push_only);
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
	/* Binary on a terminal is noise, and can drive it (curl refuses it too). */
	if (o->output && !strcmp(o->output, "-") && o->format->bit == FORMAT_PPROF &&
	    isatty(STDOUT_FILENO))
		return error("not writing a gzip-compressed profile to a terminal: pipe it, give "
			     "-o FILE, or read it with --format dump, folded or text");
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
	if (g->waits && !(kind_takes(o->kind) & KIND_TAKES_WAITS))
		return error("option \"%s\" does not apply to %s profiles, only to those of "
			     "waits off the CPU (-t offcpu)", g->waits, o->kind->name);
	if (g->hz && !(kind_takes(o->kind) & KIND_TAKES_HZ))
		return error("option \"-F\" does not apply to %s profiles, which are not sampled "
			     "by time",
			     o->kind->name);
	if (options_check_inject(o) < 0)
		return -1;
	o->children = children;
	return 0;
}
