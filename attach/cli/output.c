/*
 * output.c — the table of output formats and the one path from a profile
 * in memory to a file: encode into a capped buffer, write, commit.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attach/kinds/kinds.h"
#include "attach/cli/options.h"
#include "attach/cli/output.h"
#include "attach/engine/target.h"
#include "common/err.h"
#include "model/profile.h"
#include "writer/folded.h"
#include "writer/pprof.h"
#include "writer/svg.h"
#include "writer/text.h"
#include "writer/top.h"

#define PROFILE_MAX_BYTES (1u << 30)

/* What a writer knows of the capture beyond the profile. */
struct write_ctx {
	const struct target *t;
	const struct kind *kind;
	const struct capture_report *rep;
};

static int write_pprof(const struct profile *p, const struct write_ctx *c, struct buf *b)
{
	(void)c;
	return pprof_write(p, b);
}

static int write_text(const struct profile *p, const struct write_ctx *c, struct buf *b)
{
	if (c->kind->values == VALUES_HEAP)
		return text_write_heap(p, profile_period(p), b);
	return text_write_count(p, c->kind->name, b);
}

static int write_dump(const struct profile *p, const struct write_ctx *c, struct buf *b)
{
	char title[256], when[64];
	time_t sec = (time_t)(c->rep->start_real_ns / 1000000000u);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(title, sizeof(title), "Threads of %d (%s) at %s: %llu threads", (int)c->t->pid,
		 c->t->comm, when, (unsigned long long)c->rep->samples);
	return text_write_dump(p, title, b);
}

static int write_folded(const struct profile *p, const struct write_ctx *c, struct buf *b)
{
	(void)c;
	return folded_write(p, top_default_value(p), b);
}

static int write_svg(const struct profile *p, const struct write_ctx *c, struct buf *b)
{
	size_t v = top_default_value(p);
	const struct profile_value_type *vt = profile_sample_types(p);
	char title[256], when[64];
	time_t sec = (time_t)(c->rep->start_real_ns / 1000000000u);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(title, sizeof(title), "%s of %d (%s), %s", profile_string(p, vt[v].type),
		 (int)c->t->pid, c->t->comm, when);
	return svg_write(p, v, title, profile_string(p, vt[v].unit), b);
}

static const struct {
	unsigned format;
	const char *ext;
	int (*write)(const struct profile *, const struct write_ctx *, struct buf *);
} writers[] = {
	{ FORMAT_PPROF, "pb.gz", write_pprof },
	{ FORMAT_TEXT, "txt", write_text },
	{ FORMAT_DUMP, "txt", write_dump },
	{ FORMAT_FOLDED, "folded", write_folded },
	{ FORMAT_SVG, "svg", write_svg },
};

static size_t writer_index(unsigned format)
{
	size_t i;

	for (i = 0; i < sizeof(writers) / sizeof(writers[0]) - 1; i++)
		if (writers[i].format == format)
			break;
	return i;
}

const char *output_ext(unsigned format)
{
	return writers[writer_index(format)].ext;
}

int output_write(const struct options *o, const struct target *t, const struct capture_report *rep,
		 const struct profile *prof, struct outfile *out)
{
	struct write_ctx wc = { t, o->kind, rep };
	struct buf b;
	int code = EXIT_OK;

	buf_init(&b, PROFILE_MAX_BYTES);
	if (writers[writer_index(o->format)].write(prof, &wc, &b) < 0) {
		error("cannot encode the profile: out of memory or larger than %u MiB",
		      PROFILE_MAX_BYTES >> 20);
		outfile_abort(out);
		code = EXIT_INTERNAL;
	} else if (outfile_write(out, b.data, b.len) < 0 || outfile_commit(out) < 0) {
		code = EXIT_OUTPUT;
	}
	buf_release(&b);
	return code;
}
