/*
 * formats.c — the table of output formats (formats.h). Each writer turns
 * a profile in memory into bytes; committing them to a file is the
 * command line's business (cli/output.c).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attach/kinds/formats.h"
#include "attach/source/source.h"
#include "model/profile.h"
#include "writer/folded.h"
#include "writer/pprof.h"
#include "writer/svg.h"
#include "writer/text.h"
#include "writer/top.h"

static int write_pprof(const struct profile *p, const struct write_info *w, struct buf *b)
{
	(void)w;
	return pprof_write(p, b);
}

static int write_text(const struct profile *p, const struct write_info *w, struct buf *b)
{
	return w->text ? w->text(p, w->kind, b) : -1;
}

static void utc(uint64_t real_ns, char *out, size_t cap)
{
	time_t sec = (time_t)(real_ns / 1000000000u);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(out, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static int write_dump(const struct profile *p, const struct write_info *w, struct buf *b)
{
	char title[256], when[64];

	utc(w->start_real_ns, when, sizeof(when));
	snprintf(title, sizeof(title), "Threads of %d (%s) at %s: %llu thread%s", (int)w->pid,
		 w->comm, when, (unsigned long long)w->samples, w->samples == 1 ? "" : "s");
	return text_write_dump(p, title, b);
}

static int write_folded(const struct profile *p, const struct write_info *w, struct buf *b)
{
	return folded_write(p, top_default_value(p), w->frame_lines ? FOLDED_LINES : 0,
			    w->group_by, b);
}

static int write_svg(const struct profile *p, const struct write_info *w, struct buf *b)
{
	size_t v = top_default_value(p);
	const struct profile_value_type *vt = profile_sample_types(p);
	char title[256], when[64];

	utc(w->start_real_ns, when, sizeof(when));
	snprintf(title, sizeof(title), "%s of %d (%s), %s", profile_string(p, vt[v].type),
		 (int)w->pid, w->comm, when);
	return svg_write(p, v, w->frame_lines ? FOLDED_LINES : 0, w->group_by, title,
			 profile_string(p, vt[v].unit), b);
}

static const struct format formats[] = {
	{ "pprof", "gzip-compressed profile.proto for go tool pprof (default)", "pb.gz",
	  FORMAT_PPROF, write_pprof, 0, 0 },
	/* pprof scales the legacy form's sample counts itself. */
	{ "text", "Go's legacy text form, which pprof also reads", "txt", FORMAT_TEXT, write_text,
	  0, 1 },
	/* A dump tells threads apart; the other forms group them by stack. */
	{ "dump", "a thread dump for people: each thread, its state, its stack", "txt", FORMAT_DUMP,
	  write_dump, LABEL_TID | LABEL_THREAD | LABEL_STATE | LABEL_SYSCALL, 0 },
	{ "folded", "collapsed stacks for flamegraph.pl, inferno, speedscope", "folded",
	  FORMAT_FOLDED, write_folded, 0, 0 },
	{ "svg", "an interactive flame graph: hover, click to zoom, search", "svg", FORMAT_SVG,
	  write_svg, 0, 0 },
};

const struct format *format_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(formats[i].name, name))
			return &formats[i];
	return NULL;
}

const struct format *format_all(unsigned *n)
{
	*n = sizeof(formats) / sizeof(formats[0]);
	return formats;
}
