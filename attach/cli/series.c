/*
 * series.c — the capture loop. Start times are kept on a fixed grid
 * (start + k * period), so a slow capture does not make the series drift;
 * a start that is already past is taken at once.
 */
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach/cli/naming.h"
#include "attach/cli/options.h"
#include "attach/cli/output.h"
#include "attach/cli/report.h"
#include "attach/cli/series.h"
#include "attach/capture/target.h"
#include "attach/kinds/kinds.h"
#include "attach/push/push.h"
#include "common/hurry.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/watchdog.h"
#include "model/profile.h"

#define SERIES_MARGIN_NS 1000000000ull /* a capture may end this late (or half an interval) */
#define SERIES_PUSH_GRACE_MS 500 /* after a stop signal, the last pushes: the spool keeps them */

void series_request(const struct options *o, const struct target *t,
			   struct debuginfo *debug, struct linecache *lc, struct capture_req *q)
{
	const struct kind *k = o->kind;
	size_t i;

	memset(q, 0, sizeof(*q));
	q->t = t;
	q->what = k->name;
	q->types = &k->types;
	q->policy = k->policy;
	q->view = k->view;
	q->labels = k->labels | o->format->labels;
	for (i = 0; o->group_by[i]; i++)
		q->labels |= capture_label_bit(o->group_by[i]);
	q->raw = o->format->raw;
	q->runs_only = !!(k->flags & KIND_RUNS_ONLY);
	q->duration_ns = o->duration_ns;
	q->duration_given = o->duration_given;
	q->period_ns = 1000000000ull / o->hz;
	q->stack_cap = o->stack_cap;
	q->stack_cap_given = o->stack_given;
	q->sampler = o->sampler;
	q->children = o->children;
	q->kernel = !o->no_kernel;
	q->min_wait_ns = o->min_wait_ns;
	q->waker_stacks = o->waker_stacks;
	q->quiet = o->quiet;
	q->progress = o->progress ? report_progress : NULL;
	q->debug = debug;
	q->line_cache = lc;
	q->inject = o->inject_state;
	q->inject_rate = o->inject_rate;
}

/*
 * One capture: to the file path (NULL: none, --push alone), and to the
 * push queue. Its JSON line then waits for the push's outcome (push.h).
 */
static int series_one(const struct options *o, const struct target *t, struct debuginfo *debug,
		      struct linecache *lc, const char *path, unsigned number, struct push *push,
		      struct capture_report *rep)
{
	struct profile *prof = NULL;
	struct capture_req req;
	struct outfile file, *out = path ? &file : NULL;
	struct buf enc, json;
	int code;

	memset(rep, 0, sizeof(*rep));
	buf_init(&enc, 0);
	buf_init(&json, 1 << 16);
	series_request(o, t, debug, lc, &req);
	watchdog_phase("capturing (attaching, sampling, unwinding, source lines)", EXIT_INTERRUPTED,
		       0);
	if (out && outfile_open(out, path) < 0) {
		code = EXIT_OUTPUT;
		goto done;
	}
	code = o->kind->source->capture(&req, &prof, rep);
	hurry_end(); /* a source that never began sampling did not end it */
	if (code != EXIT_OK && code != EXIT_USAGE && watchdog_stop_signal()) {
		/* Whatever failed, it failed because we were leaving. */
		note("stopped by %s before the capture could end; no profile written",
		     strsignal(watchdog_stop_signal()));
		code = EXIT_INTERRUPTED;
	}
	if (code != EXIT_OK) {
		if (out)
			outfile_abort(out);
		goto done;
	}
	if (o->stats)
		report_stats(rep);
	if (rep->samples == 0 && rep->lost_access) {
		target_lost_access(t);
		if (out)
			outfile_abort(out);
		code = EXIT_ATTACH;
		goto done;
	}
	if (rep->samples == 0 && (rep->gone || rep->execed)) {
		error("%d (%s) %s before anything was captured; no profile written", (int)t->pid,
		      t->comm, rep->gone ? "exited" : "executed a new program");
		if (out)
			outfile_abort(out);
		code = EXIT_GONE;
		goto done;
	}
	watchdog_phase("writing the profile", EXIT_INTERRUPTED, 0);
	code = output_write(o, t, rep, prof, out, push ? &enc : NULL);
	if (code != EXIT_OK)
		goto done;
	if (rep->gone || rep->execed) {
		warning("%d (%s) %s during the capture; the profile holds what was collected",
			(int)t->pid, t->comm, rep->gone ? "exited" : "executed a new program");
		code = EXIT_PARTIAL;
	} else if (rep->lost_access) {
		target_lost_access(t);
		code = EXIT_PARTIAL;
	}
	report_written(o, rep, path, prof);
	if (o->top)
		report_top(prof, o->top, report_top_fd(o));
	else if (!o->quiet && isatty(STDERR_FILENO))
		report_top(prof, OPT_TOP_N, STDERR_FILENO);
done:
	if (push && enc.len) {
		/* The line is printed by push once the profile is pushed, spooled or dropped. */
		if (o->summary_json && report_json_open(o, t, rep, prof, path, number, code, &json) < 0)
			buf_release(&json);
		push_add(push, number, rep->start_real_ns, rep->start_real_ns + rep->duration_ns,
			 enc.data, enc.len, o->summary_json && json.len ? &json : NULL);
	} else if (o->summary_json) {
		report_json(o, t, rep, prof, path, number, code);
	}
	buf_release(&enc);
	buf_release(&json);
	profile_free(prof);
	return code;
}

/* How far past its interval a capture of a series may end before it is said to overrun. */
static uint64_t series_margin(uint64_t every_ns)
{
	return every_ns / 2 > SERIES_MARGIN_NS ? every_ns / 2 : SERIES_MARGIN_NS;
}

/*
 * Capture n ended: if later than its interval's end plus the margin, say
 * so (once a series, and then every tenth), since the next starts at once
 * and the series is no longer on its grid.
 */
static void series_overrun(const struct options *o, unsigned n, uint64_t start)
{
	static unsigned told;
	uint64_t now = clock_mono_ns(), end = start + n * o->every_ns;

	if (!o->every_ns || now <= end + series_margin(o->every_ns))
		return;
	if (told++ % 10 == 0)
		warning("capture %u ended %.1fs after its interval of %.3gs: the next one starts at "
			"once, and the series falls behind its schedule%s",
			n, (double)(now - end) / 1e9, (double)o->every_ns / 1e9,
			told > 1 ? " (again)" : "");
}

int series_run(const struct options *o, const struct target *t)
{
	char tmpl[128], path[PATH_MAX], why[160];
	const char *tp = o->output;
	struct capture_report rep;
	struct name_vars v;
	uint64_t start;
	unsigned n, written = 0, unsent = 0;
	sigset_t set;
	int sigfd, code = EXIT_OK, w;
	struct debuginfo *debug = NULL;
	struct linecache *lc = NULL;
	struct push *push = NULL;

	/* --push alone writes no local file. */
	if (!tp && !o->push.url)
		tp = name_default(o->every_ns != 0, o->format->ext, tmpl, sizeof(tmpl));
	if (tp && o->count != 1 && strcmp(tp, "-") != 0 && !name_varies(tp)) {
		error("output name \"%s\" is the same for every capture: add %%n or %%t", tp);
		return EXIT_USAGE;
	}
	/* Debug files are found once and kept for every capture of the series. */
	if (!o->no_lines && !(debug = capture_debug_new())) {
		error("out of memory");
		return EXIT_INTERNAL;
	}
	/* Lines resolved by earlier runs, by build ID (none: DWARF alone, as with the option). */
	if (debug && !o->no_line_cache)
		lc = capture_line_cache_new();
	proc_stop_signals(&set, 0);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (o->push.url && push_start(&push, &o->push, t, o->kind->name,
				      o->summary_json ? report_json_fd(o) : -1) < 0) {
		capture_line_cache_free(lc);
		capture_debug_free(debug);
		return EXIT_USAGE;
	}
	sigfd = capture_stop_open();
	if (t->state == 'T' && !o->quiet)
		note("%d (%s) is stopped (SIGSTOP or a debugger): it runs no code until SIGCONT%s",
		     (int)t->pid, t->comm,
		     o->kind->flags & KIND_RUNS_ONLY ? ", so the profile will be empty" : "");
	start = clock_mono_ns();
	for (n = 1; o->count == 0 || n <= o->count; n++) {
		v.pid = t->pid;
		v.when = time(NULL);
		v.number = n;
		v.type = o->kind->name;
		if (tp && name_expand(tp, &v, path, sizeof(path), why, sizeof(why)) < 0) {
			error("invalid output name \"%s\": %s", tp, why);
			code = EXIT_USAGE;
			break;
		}
		if (o->every_ns)
			watchdog_due(start + n * o->every_ns + series_margin(o->every_ns), n);
		code = series_one(o, t, debug, lc, tp ? path : NULL, n, push, &rep);
		if (code == EXIT_OK || code == EXIT_PARTIAL)
			written++;
		if (code != EXIT_OK || rep.stop_signal || watchdog_stop_signal() || rep.lost_access ||
		    (o->count && n == o->count))
			break;
		series_overrun(o, n, start);
		watchdog_phase("waiting for the next capture", code, 0);
		w = capture_wait(t->pid, sigfd, start + n * o->every_ns, NULL);
		if (w == 1)
			break;
		if (w == 2) {
			note("%d (%s) exited; the series ends after %u captures", (int)t->pid,
			     t->comm, written);
			code = EXIT_GONE;
			break;
		}
	}
	capture_stop_close(sigfd);
	capture_line_cache_free(lc);
	capture_debug_free(debug);
	/* What is left to send stays in the spool if the watchdog must end us here. */
	watchdog_phase("sending the last profiles (they stay in the spool)", EXIT_UNSENT,
		       SERIES_PUSH_GRACE_MS);
	if (push)
		unsent = push_finish(push, o->quiet);
	/* A series the target cut short is partial if anything was written. */
	if ((code == EXIT_GONE || code == EXIT_PARTIAL) && o->every_ns)
		code = written ? EXIT_PARTIAL : EXIT_GONE;
	/* The exit code is about the captures; when they went well, about the push. */
	if (code == EXIT_OK && unsent)
		code = EXIT_UNSENT;
	return code;
}
