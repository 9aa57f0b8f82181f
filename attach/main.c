/*
 * main.c — cprof-attach: parse the command line, check the target, open
 * the output (so an unwritable path fails before the target is touched),
 * capture, write the profile atomically, summarise. Exit codes are the
 * EXIT_* values of options.h.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach/capture.h"
#include "attach/kinds.h"
#include "attach/options.h"
#include "attach/target.h"
#include "common/err.h"
#include "model/profile.h"
#include "writer/outfile.h"
#include "writer/pprof.h"
#include "writer/text.h"

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

static const struct {
	unsigned format;
	const char *ext;
	int (*write)(const struct profile *, const struct write_ctx *, struct buf *);
} writers[] = {
	{ FORMAT_PPROF, "pb.gz", write_pprof },
	{ FORMAT_TEXT, "txt", write_text },
	{ FORMAT_DUMP, "txt", write_dump },
};

static void default_name(char *out, size_t cap, pid_t pid, const char *type, const char *ext)
{
	char when[32];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(out, cap, "cprof-%d-%s-%s.%s", (int)pid, type, when, ext);
}

static void print_stats(const struct capture_report *r)
{
	const struct sampler *sm = &r->sm;

	if (!r->ptrace) {
		fprintf(stderr,
			"cprof-attach: stats: %llu stacks read from libcprof.so's segment, %llu left "
			"out as torn, %llu samples the shim dropped (table full); own CPU %.3fs\n",
			(unsigned long long)r->samples, (unsigned long long)r->seg_torn,
			(unsigned long long)r->seg_dropped, r->cpu_self_s);
		return;
	}
	fprintf(stderr,
		"cprof-attach: stats: %llu samples (%llu lost to a full queue, %llu ticks of %llu "
		"late), %llu threads seen, %llu sampled\n",
		(unsigned long long)sm->samples, (unsigned long long)sm->lost,
		(unsigned long long)sm->ticks_missed, (unsigned long long)sm->ticks,
		(unsigned long long)sm->stats.threads_seen, (unsigned long long)r->threads);
	fprintf(stderr,
		"cprof-attach: stats: pause per stopped sample p50 %.1fus p99 %.1fus max %.1fus "
		"(%llu stops, %llu timed out); %llu sleeping threads read without a stop\n",
		sm->pause_p50_ns / 1e3, sm->pause_p99_ns / 1e3, sm->stats.pause_ns_max / 1e3,
		(unsigned long long)sm->stats.stops, (unsigned long long)sm->stats.stop_timeouts,
		(unsigned long long)sm->stats.blocked_reads);
	fprintf(stderr,
		"cprof-attach: stats: %llu signals passed on during stops, %llu EINTRs turned into restarts, "
		"%.1fms CPU not attributed, %llu thread CPU clocks read, %llu idle threads "
		"found unchanged\n",
		(unsigned long long)sm->stats.signals_passed, (unsigned long long)sm->stats.eintr_fixed,
		sm->cpu_unattributed_ns / 1e6, (unsigned long long)sm->threads_read,
		(unsigned long long)sm->stats.repeats);
	fprintf(stderr,
		"cprof-attach: stats: %llu stacks, %.1f frames on average, %llu truncated, %llu "
		"partial; own CPU %.3fs over %.3fs\n",
		(unsigned long long)r->rec.stacks,
		r->rec.stacks ? (double)r->rec.frames / (double)r->rec.stacks : 0.0,
		(unsigned long long)r->rec.truncated, (unsigned long long)r->rec.partial,
		r->cpu_self_s, (double)(sm->end_mono_ns - sm->start_mono_ns) / 1e9);
}

int main(int argc, char **argv)
{
	struct capture_report rep;
	struct profile *prof = NULL;
	struct outfile out;
	struct target t;
	struct options o;
	struct write_ctx wc;
	struct buf b;
	char name[256];
	const char *path;
	size_t w = 0;
	int r, code = EXIT_OK;

	err_set_prog("cprof-attach");
	signal(SIGPIPE, SIG_IGN);
	r = options_parse(&o, argc, argv);
	if (r != 0)
		return r > 0 ? EXIT_OK : EXIT_USAGE;
	err_set_quiet(o.quiet);
	if (target_check(&t, o.pid) < 0)
		return EXIT_ATTACH;
	while (writers[w].format != o.format)
		w++;
	path = o.output;
	if (!path) {
		default_name(name, sizeof(name), t.pid, o.kind->name, writers[w].ext);
		path = name;
	}
	if (outfile_open(&out, path) < 0)
		return EXIT_OUTPUT;
	code = o.kind->capture(&o, &t, &prof, &rep);
	if (code != EXIT_OK) {
		outfile_abort(&out);
		return code;
	}
	if (o.stats)
		print_stats(&rep);
	if (rep.samples == 0 && (rep.gone || rep.execed)) {
		error("%d (%s) %s before anything was captured; no profile written", (int)t.pid,
		      t.comm, rep.gone ? "exited" : "executed a new program");
		outfile_abort(&out);
		profile_free(prof);
		return EXIT_GONE;
	}
	buf_init(&b, PROFILE_MAX_BYTES);
	wc.t = &t;
	wc.kind = o.kind;
	wc.rep = &rep;
	if (writers[w].write(prof, &wc, &b) < 0) {
		error("cannot encode the profile: out of memory or larger than %u MiB",
		      PROFILE_MAX_BYTES >> 20);
		outfile_abort(&out);
		code = EXIT_INTERNAL;
		goto out;
	}
	if (outfile_write(&out, b.data, b.len) < 0 || outfile_commit(&out) < 0) {
		code = EXIT_OUTPUT;
		goto out;
	}
	if (rep.gone || rep.execed) {
		warning("%d (%s) %s during the capture; the profile holds what was collected",
			(int)t.pid, t.comm, rep.gone ? "exited" : "executed a new program");
		code = EXIT_PARTIAL;
	}
	if (!o.quiet) {
		const char *where = o.output && !strcmp(o.output, "-") ? "the profile to standard output" : path;

		if (rep.stop_signal)
			note("stopped early by %s", strsignal(rep.stop_signal));
		if (rep.ptrace)
			note("wrote %s: %llu samples from %llu threads over %.2fs", where,
			     (unsigned long long)rep.samples, (unsigned long long)rep.threads,
			     (double)rep.duration_ns / 1e9);
		else
			note("wrote %s: %llu stacks%s", where, (unsigned long long)rep.samples,
			     o.duration_given ? ", the change over the window" : "");
	}
out:
	buf_release(&b);
	profile_free(prof);
	return code;
}
