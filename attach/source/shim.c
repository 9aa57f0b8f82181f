/*
 * shim.c — the segment source: profile types that come from libcprof.so's
 * segment (heap, allocs, threadcreate; the view in the request says which
 * buckets and values). No thread of the target is stopped or even traced:
 * the segment is copied with process_vm_readv, once, or twice around a
 * window (-d) to report the change, as Go's net/http/pprof does with
 * ?seconds=.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/engine/target.h"
#include "attach/source/record.h"
#include "attach/source/segment.h"
#include "attach/source/source.h"
#include "attach/source/views.h"
#include "common/err.h"
#include "common/proc.h"
#include "model/profile.h"

/* Where the shim is, to tell the user how to start the target with it. */
static void shim_path(char *out, size_t cap)
{
	static const char *const rel[] = { "libcprof.so", "../lib/libcprof.so" };
	char exe[PATH_MAX], p[PATH_MAX + 32], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t i;

	if (n > 0) {
		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(p, sizeof(p), "%s/%s", exe, rel[i]);
			if (realpath(p, out) && access(out, R_OK) == 0 && strlen(out) < cap)
				return;
		}
	}
	snprintf(out, cap, "/usr/local/lib/libcprof.so");
}

static int copy_segment(const struct target *t, uint64_t addr, uint64_t len,
			struct seg_copy *c)
{
	char why[256];
	int r;

	r = segment_copy(c, segment_read_process, (void *)(intptr_t)t->pid, addr, len, why,
			 sizeof(why));
	if (r == 0)
		return EXIT_OK;
	if (errno == EPERM || errno == EACCES) {
		target_attach_error(t, EPERM);
		return EXIT_ATTACH;
	}
	if (errno == ESRCH)
		return EXIT_GONE;
	error("cannot read the profile of %d (%s): %s", (int)t->pid, t->comm, why);
	return r == -2 ? EXIT_ATTACH : EXIT_INTERNAL;
}

/* Copies s into out (cap bytes) with anything unprintable as '?': it comes from the target. */
static const char *printable(const char *s, char *out, size_t cap)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < cap; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = 0;
	return out;
}

/*
 * What the shim recorded about itself, one line each: the settings it
 * rejected (the default is in force), and sampled blocks its pool could
 * not hold.
 */
static void report_shim(const struct target *t, const struct seg_header *h)
{
	static const char *const problem[] = { "invalid", "not a number", "negative", "too large" };
	char name[64], value[64];
	uint32_t i;

	for (i = 0; i < h->nsettings && i < SEG_MAX_SETTINGS; i++) {
		const struct seg_setting *s = &h->settings[i];
		int rate = strcmp(s->name, "CPROF_SAMPLE_RATE") == 0;

		warning("%s=%s in %d is %s; %s %llu%s", printable(s->name, name, sizeof(name)),
			printable(s->value, value, sizeof(value)), (int)t->pid,
			problem[s->problem < 4 ? s->problem : 0], rate ? "sampling at" : "using",
			(unsigned long long)s->used, rate ? "" : " instead");
	}
	if ((h->flags & SEG_FLAG_NO_POOL) && h->no_pool)
		warning("libcprof.so in %d has no pool (an address-space limit or strict overcommit): "
			"%llu sampled blocks cost their full page-aligned size in the program's heap",
			(int)t->pid, (unsigned long long)h->no_pool);
}

static int add_buckets(struct recorder *rec, const struct shim_view *view, int raw,
		       const struct seg_copy *now, const struct seg_copy *base)
{
	uint32_t want = view->bucket;
	struct profile_label_in bytes = { "bytes", NULL, 0, "bytes" };
	uint64_t pcs[SEG_MAX_FRAMES];
	int64_t v[4];
	size_t i, j, added = 0;

	for (i = 0; i < now->n; i++) {
		const struct seg_bucket *b = &now->b[i], *o = NULL;

		if (b->kind != want)
			continue;
		if (base) {
			/*
			 * Buckets are append-only, so a stack in both copies sits at
			 * the same index unless torn buckets were left out of one:
			 * look there first, then a little below.
			 */
			size_t top = i < base->n ? i + 1 : base->n;

			for (j = top; j-- > 0 && j + 64 >= i;)
				if (base->b[j].hash == b->hash && base->b[j].kind == b->kind &&
				    base->b[j].flags == b->flags && base->b[j].nframes == b->nframes &&
				    !memcmp(base->b[j].frames, b->frames, b->nframes * 8)) {
					o = &base->b[j];
					break;
				}
		}
		if (!view->values(b, o, raw, v))
			continue;
		for (j = 0; j < b->nframes; j++)
			pcs[j] = b->frames[j] ? b->frames[j] - 1 : 0;
		/* Like Go, an average object size as the "bytes" label. */
		bytes.num = b->alloc_samples ? (int64_t)(b->alloc_sampled_bytes / b->alloc_samples) : 0;
		if (recorder_add_pcs(rec, pcs, b->nframes, b->flags & SEG_BUCKET_TRUNCATED, v,
				     &bytes, view->bytes_label ? 1 : 0) == 0)
			added++;
	}
	return (int)added;
}

static int capture_segment(const struct capture_req *q, struct profile **out,
			   struct capture_report *rep)
{
	const struct target *t = q->t;
	const struct shim_view *view = q->view;
	struct seg_header none = { .sample_rate = SEG_DEFAULT_RATE };
	struct seg_copy a = { 0 }, b = { 0 };
	struct recorder *rec = NULL;
	struct profile *prof = NULL;
	char shim[PATH_MAX];
	uint64_t addr, len, t0;
	int r, code = EXIT_INTERNAL, raw = q->raw;

	*out = NULL;
	memset(rep, 0, sizeof(*rep));
	r = segment_find(t->pid, &addr, &len);
	if (r < 0) {
		if (errno == EACCES || errno == EPERM) {
			target_attach_error(t, EPERM);
			return EXIT_ATTACH;
		}
		error("cannot attach to %d (%s): the process exited", (int)t->pid, t->comm);
		return EXIT_ATTACH;
	}
	if (r == 2) {
		/* Loaded, armed, nothing sampled yet: an empty profile says so truthfully. */
		if (!q->quiet)
			note("%d (%s) has libcprof.so but no profile table yet: it makes one at its "
			     "first sample (or could not); the profile is empty",
			     (int)t->pid, t->comm);
		prof = profile_new();
		if (!prof || capture_declare(q, prof, view->period(&none)) < 0) {
			error("out of memory");
			profile_free(prof);
			return EXIT_INTERNAL;
		}
		rep->start_real_ns = clock_real_ns();
		profile_set_time(prof, (int64_t)rep->start_real_ns, 0);
		*out = prof;
		return EXIT_OK;
	}
	if (r == 0) {
		shim_path(shim, sizeof(shim));
		error("cannot profile the %s of %d (%s): libcprof.so is not loaded in it; start it "
		      "with LD_PRELOAD=%s",
		      q->what, (int)t->pid, t->comm, shim);
		return EXIT_ATTACH;
	}
	rep->start_real_ns = clock_real_ns();
	t0 = clock_mono_ns();
	if ((code = copy_segment(t, addr, len, &a)) != EXIT_OK)
		goto err;
	report_shim(t, &a.h);
	if (a.h.state == SEG_STATE_OFF) {
		char note_text[sizeof(a.h.note)];

		error("cannot profile the %s of %d (%s): libcprof.so stays out of the way in it: %s",
		      q->what, (int)t->pid, t->comm,
		      printable(a.h.note, note_text, sizeof(note_text)));
		code = EXIT_ATTACH;
		goto err;
	}
	if (a.h.allocator[0] && !q->quiet) {
		char alloc_text[sizeof(a.h.allocator)];

		note("libcprof.so in %d samples on top of %s", (int)t->pid,
		     printable(a.h.allocator, alloc_text, sizeof(alloc_text)));
	}
	if (a.h.inherited && !q->quiet)
		note("%d (%s) inherited %llu stacks of live samples from %u at fork", (int)t->pid,
		     t->comm, (unsigned long long)a.h.inherited, a.h.parent_pid);
	if (q->duration_given) {
		if (!q->quiet)
			note("profiling %d (%s): %s %s during the next %.3gs", (int)t->pid, t->comm,
			     q->what, view->window, (double)q->duration_ns / 1e9);
		r = capture_wait(t->pid, -1, clock_mono_ns() + q->duration_ns, &rep->stop_signal);
		if (r == 2) {
			error("%d (%s) exited during the window; its allocations over it are lost",
			      (int)t->pid, t->comm);
			code = EXIT_GONE;
			goto err;
		}
		if ((code = copy_segment(t, addr, len, &b)) != EXIT_OK)
			goto err;
	}
	code = EXIT_INTERNAL;
	prof = profile_new();
	if (!prof || capture_declare(q, prof, view->period(&a.h)) < 0) {
		error("out of memory");
		goto err;
	}
	rec = recorder_new(prof, t->pid, SEG_MAX_FRAMES);
	if (!rec) {
		target_attach_error(t, errno == ENOENT ? ESRCH : EPERM);
		code = EXIT_ATTACH;
		goto err;
	}
	if (q->duration_given)
		r = add_buckets(rec, view, raw, &b, &a);
	else
		r = add_buckets(rec, view, raw, &a, NULL);
	rep->samples = (uint64_t)r;
	rep->duration_ns = q->duration_given ? clock_mono_ns() - t0 : 0;
	rep->seg_torn = a.torn + b.torn;
	rep->seg_dropped = q->duration_given ? b.h.dropped : a.h.dropped;
	profile_set_time(prof, (int64_t)rep->start_real_ns, (int64_t)rep->duration_ns);
	if (view->off_warning && a.h.sample_rate == 0)
		warning("%d (%s) runs libcprof.so with sampling off (CPROF_SAMPLE_RATE=0)",
			(int)t->pid, t->comm);
	if (rep->seg_dropped)
		warning("libcprof.so in %d dropped %llu samples: its table is full (raise "
			"CPROF_MAX_BUCKETS)",
			(int)t->pid, (unsigned long long)rep->seg_dropped);
	rep->cpu_self_s = capture_self_cpu();
	recorder_free(rec);
	segment_release(&a);
	segment_release(&b);
	*out = prof;
	return EXIT_OK;
err:
	if (code == EXIT_GONE && !rep->samples)
		error("%d (%s) exited before its profile could be read", (int)t->pid, t->comm);
	recorder_free(rec);
	profile_free(prof);
	segment_release(&a);
	segment_release(&b);
	return code;
}

const struct source source_segment = {
	.name = "segment",
	.capture = capture_segment,
};
