/*
 * top.c — `cprof-attach top` (top.h): back-to-back captures of one
 * interval each (series_request(), the kind's own source, as record runs
 * them), each folded into the tables and drawn. On a terminal a second
 * thread reads the keys; q asks the stop that Ctrl-C asks (a SIGINT to
 * ourselves, taken by the watchdog), so a capture in flight ends and
 * detaches as at any stop. Pausing stops capturing: while paused the
 * target is not attached to at all, the screen keeps the last interval,
 * and the time paused counts in no span.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/capture/target.h"
#include "attach/cli/options.h"
#include "attach/cli/report.h"
#include "attach/cli/series.h"
#include "attach/cli/top.h"
#include "attach/cli/toptab.h"
#include "attach/cli/tty.h"
#include "attach/kinds/kinds.h"
#include "common/err.h"
#include "common/hurry.h"
#include "common/proc.h"
#include "common/watchdog.h"
#include "model/profile.h"
#include "writer/top.h"

#define TOP_KEY_POLL_MS 200 /* how often the key thread looks for the end and a new size */

struct top_run {
	struct top_view v;
	int tty;              /* drawing a screen, reading keys */
	int wake[2];          /* a key that changes the loop's course (pause, quit) writes here */
	int ending;           /* the key thread's end (atomic) */
	int quit;             /* q (under the lock) */
	const char *gone;     /* how the target went away ("exited"), or NULL */
	unsigned rows, cols;  /* the size last drawn at */
	int out_err;          /* text: the errno a block could not be written with (EPIPE: | head) */
};

/* Draw the view as it is now: the screen, or (text) nothing: blocks are written per interval. */
static void top_redraw(struct top_run *r)
{
	struct buf b;
	unsigned rows, cols;

	if (!r->tty)
		return;
	buf_init(&b, TOP_FRAME_MAX);
	tty_size(&rows, &cols);
	r->rows = rows;
	r->cols = cols;
	top_draw_screen(&r->v, rows, cols, &b);
	(void)tty_write((const char *)b.data, b.len);
	buf_release(&b);
}

static void top_wake(struct top_run *r)
{
	char c = 1;

	(void)!write(r->wake[1], &c, 1);
}

/* The tid typed after f: empty shows every thread; one not seen is refused with a line. */
static void top_filter(struct top_view *v)
{
	long tid = strtol(v->entry, NULL, 10);

	v->prompting = 0;
	if (!v->entry[0])
		v->filter = 0;
	else if (tid > 0 && toptab_has_thread(v->tab, (pid_t)tid))
		v->filter = (pid_t)tid;
	else
		snprintf(v->msg, sizeof(v->msg), "no thread %.11s has been sampled: filter unchanged",
			 v->entry);
	v->entry[0] = 0;
}

/* One byte of the prompt: digits, backspace, Enter ends it, Esc cancels. */
static void top_prompt_key(struct top_view *v, int c)
{
	size_t n = strlen(v->entry);

	if (c == '\r' || c == '\n')
		top_filter(v);
	else if (c == 27) {
		v->prompting = 0;
		v->entry[0] = 0;
	} else if ((c == 127 || c == 8) && n)
		v->entry[n - 1] = 0;
	else if (c >= '0' && c <= '9' && n + 1 < sizeof(v->entry)) {
		v->entry[n] = (char)c;
		v->entry[n + 1] = 0;
	}
}

/* One key, under the lock. */
static void top_key(struct top_run *r, int c)
{
	struct top_view *v = &r->v;

	v->msg[0] = 0;
	if (v->prompting) {
		top_prompt_key(v, c);
		return;
	}
	switch (c) {
	case 's': v->by_total = 0; break;
	case 't': v->by_total = 1; break;
	case 'a': v->span = v->span == TOPTAB_ALL ? TOPTAB_INTERVAL : TOPTAB_ALL; break;
	case 'f': v->prompting = 1; v->entry[0] = 0; break;
	case 'p':
	case ' ':
		v->paused = !v->paused;
		top_wake(r);
		break;
	case 'q':
		r->quit = 1;
		/* The stop Ctrl-C asks: a capture in flight ends and detaches now. */
		kill(getpid(), SIGINT);
		top_wake(r);
		break;
	default:
		break;
	}
}

/* A terminal resized (over ssh too: no SIGWINCH handler needed) is drawn again at its size. */
static void top_resized(struct top_run *r)
{
	unsigned rows, cols;

	tty_size(&rows, &cols);
	pthread_mutex_lock(&r->v.lock);
	if (rows != r->rows || cols != r->cols)
		top_redraw(r);
	pthread_mutex_unlock(&r->v.lock);
}

static void *top_keys(void *arg)
{
	struct top_run *r = arg;
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	unsigned char c;
	ssize_t n;

	while (!__atomic_load_n(&r->ending, __ATOMIC_ACQUIRE)) {
		if (poll(&p, 1, TOP_KEY_POLL_MS) <= 0) {
			top_resized(r);
			continue;
		}
		n = read(STDIN_FILENO, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the terminal is gone: the stop signal (SIGHUP) ends the loop */
		pthread_mutex_lock(&r->v.lock);
		top_key(r, c);
		top_redraw(r);
		pthread_mutex_unlock(&r->v.lock);
	}
	return NULL;
}

/* The figures of the interval just captured, and its profile folded in. */
static void top_fold(struct top_run *r, const struct capture_report *rep,
		     const struct profile *prof)
{
	struct top_view *v = &r->v;
	const struct profile_value_type *ty;
	size_t vi = 0;

	if (prof && profile_nvalues(prof)) {
		vi = top_default_value(prof);
		ty = &profile_sample_types(prof)[vi];
		snprintf(v->vtype, sizeof(v->vtype), "%s", profile_string(prof, ty->type));
		snprintf(v->vunit, sizeof(v->vunit), "%s", profile_string(prof, ty->unit));
	}
	if (toptab_fold(v->tab, prof, vi) < 0)
		snprintf(v->msg, sizeof(v->msg), "out of memory: this interval is incomplete");
	v->intervals++;
	v->samples = rep->samples;
	v->lost = report_lost(rep);
	v->samples_all += v->samples;
	v->lost_all += v->lost;
	v->dur_ns = rep->duration_ns;
	v->dur_all_ns += rep->duration_ns;
	if (rep->sampler)
		snprintf(v->sampler, sizeof(v->sampler), "%s", rep->sampler);
	else if (!v->sampler[0])
		snprintf(v->sampler, sizeof(v->sampler), "%s",
			 rep->ptrace ? "ptrace" : rep->perf || rep->offcpu ? "perf" : "shim");
}

/*
 * While paused: wait for a key that resumes or quits, a stop signal, or
 * the target's end. 0 to go on, 1 to stop, 2 when the target is gone.
 */
static int top_wait_paused(struct top_run *r, int sigfd)
{
	struct pollfd p[2] = { { .fd = r->wake[0], .events = POLLIN }, { .fd = sigfd, .events = POLLIN } };
	char drain[16];
	int paused;

	for (;;) {
		pthread_mutex_lock(&r->v.lock);
		paused = r->v.paused && !r->quit;
		pthread_mutex_unlock(&r->v.lock);
		if (!paused)
			return 0;
		if (watchdog_stop_signal() || capture_stop_take(sigfd))
			return 1;
		if (target_exited(r->v.t->pid)) /* a zombie too: its parent may not reap it soon */
			return 2;
		if (poll(p, sigfd >= 0 ? 2 : 1, TOP_KEY_POLL_MS) > 0 && (p[0].revents & POLLIN))
			(void)!read(r->wake[0], drain, sizeof(drain));
	}
}

/* One interval: capture, fold, draw. An EXIT_* code; *stop set when top should end. */
static int top_interval(struct top_run *r, struct debuginfo *debug, int *stop)
{
	const struct options *o = r->v.o;
	struct capture_req req;
	struct capture_report rep;
	struct profile *prof = NULL;
	struct buf b;
	int code;

	memset(&rep, 0, sizeof(rep));
	series_request(o, r->v.t, debug, NULL, &req);
	req.quiet = 1;      /* one capture line per interval would scroll the view away */
	req.progress = NULL;
	watchdog_phase("capturing an interval of top", EXIT_INTERRUPTED, 0);
	/* The capture line once, at the first interval: the header says the rest. */
	if (r->v.intervals)
		err_set_quiet(1);
	pthread_mutex_lock(&r->v.lock);
	r->v.capturing = 1;
	pthread_mutex_unlock(&r->v.lock);
	code = o->kind->source->capture(&req, &prof, &rep);
	hurry_end();
	err_set_quiet(r->tty || o->quiet);
	pthread_mutex_lock(&r->v.lock);
	r->v.capturing = 0;
	pthread_mutex_unlock(&r->v.lock);
	*stop = rep.stop_signal || watchdog_stop_signal() || rep.lost_access || rep.gone || rep.execed;
	if (code != EXIT_OK) {
		profile_free(prof);
		/* Whatever failed, it failed because we were leaving: q or Ctrl-C. */
		return watchdog_stop_signal() && code != EXIT_USAGE ? EXIT_OK : code;
	}
	pthread_mutex_lock(&r->v.lock);
	if (!r->quit && !watchdog_stop_signal()) {
		top_fold(r, &rep, prof);
		if (r->tty) {
			top_redraw(r);
		} else {
			buf_init(&b, TOP_FRAME_MAX);
			top_draw_text(&r->v, &b);
			if ((fwrite(b.data, 1, b.len, stdout) < b.len || fflush(stdout) != 0) &&
			    !r->out_err)
				r->out_err = errno ? errno : EIO;
			buf_release(&b);
		}
	}
	*stop |= r->quit || r->out_err;
	pthread_mutex_unlock(&r->v.lock);
	profile_free(prof);
	if (rep.gone || rep.execed) {
		r->gone = rep.execed ? "executed a new program" : "exited";
		return EXIT_GONE;
	}
	if (rep.lost_access)
		target_lost_access(r->v.t);
	return rep.lost_access ? EXIT_ATTACH : EXIT_OK;
}

/* The intervals until q, a stop signal, --count, or the target's end. An EXIT_* code. */
static int top_loop(struct top_run *r, int sigfd)
{
	struct debuginfo *debug = NULL;
	unsigned n;
	int code = EXIT_OK, stop = 0, w;

	if (!r->v.o->no_lines && !(debug = capture_debug_new())) {
		error("out of memory");
		return EXIT_INTERNAL;
	}
	for (n = 1; !stop && (r->v.o->count == 0 || n <= r->v.o->count); n++) {
		watchdog_phase("paused", EXIT_OK, 0);
		w = top_wait_paused(r, sigfd);
		if (w == 2) {
			r->gone = "exited";
			code = EXIT_GONE;
		}
		if (w)
			break;
		code = top_interval(r, debug, &stop);
		if (code != EXIT_OK)
			break;
	}
	capture_debug_free(debug);
	return code;
}

/* The kinds top can show: those sampled over a window or read as a change over one. */
static int top_check(struct options *o)
{
	if (o->kind->duration == DURATION_NONE)
		return error("top shows a profile over intervals: %s is one snapshot (cprof-attach "
			     "dump -p PID shows every thread now)",
			     o->kind->name);
	/* Each interval is one capture of that length; the heap types report their change over it. */
	o->duration_ns = o->every_ns;
	o->duration_given = 1;
	o->progress = 0;
	return 0;
}

int top_run(const struct options *opts, const struct target *t)
{
	struct options o = *opts;
	struct top_run r;
	pthread_t keys;
	int code, sigfd, keys_on = 0;

	if (top_check(&o) < 0)
		return EXIT_USAGE;
	memset(&r, 0, sizeof(r));
	pthread_mutex_init(&r.v.lock, NULL);
	r.v.o = &o;
	r.v.t = t;
	r.v.by_total = 0;
	r.v.span = TOPTAB_INTERVAL;
	r.tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	if (pipe2(r.wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		error_errno("top: cannot make a pipe");
		return EXIT_INTERNAL;
	}
	if (!(r.v.tab = toptab_new())) {
		code = EXIT_INTERNAL;
		goto err;
	}
	sigfd = capture_stop_open();
	if (r.tty) {
		if (tty_begin() < 0) {
			code = EXIT_INTERNAL;
			capture_stop_close(sigfd);
			goto err;
		}
		/* Warnings would fill the held stderr for nothing; errors are kept (tty.h). */
		err_set_quiet(1);
		top_redraw(&r);
		keys_on = !pthread_create(&keys, NULL, top_keys, &r);
	}
	code = top_loop(&r, sigfd);
	__atomic_store_n(&r.ending, 1, __ATOMIC_RELEASE);
	if (keys_on)
		pthread_join(keys, NULL);
	tty_restore();
	err_set_quiet(opts->quiet);
	capture_stop_close(sigfd);
	/* A reader that has read enough (top | head) ends top as q does; anything else is an error. */
	if (r.out_err && r.out_err != EPIPE) {
		errno = r.out_err;
		error_errno("top: cannot write to standard output");
		code = EXIT_OUTPUT;
	}
	/* As a series: the target's end after something was shown is partial, before it gone. */
	if (code == EXIT_GONE) {
		note("%d (%s) %s; top ends after %u intervals", (int)t->pid, t->comm,
		     r.gone ? r.gone : "went away", r.v.intervals);
		code = r.v.intervals ? EXIT_PARTIAL : EXIT_GONE;
	}
err:
	toptab_free(r.v.tab);
	close(r.wake[0]);
	close(r.wake[1]);
	pthread_mutex_destroy(&r.v.lock);
	return code;
}
