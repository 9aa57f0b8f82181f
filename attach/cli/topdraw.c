/*
 * topdraw.c — the frames of `cprof-attach top` (top.h): the screen for a
 * terminal of any size down to 80x24 and below (lines cut at its width,
 * the tables given what rows are left), and the plain-text block for a
 * pipe or a file. Names the target chose go through sanitize_str() and
 * lose a C++ parameter list (top_short_name), as the --top table's do.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attach/capture/target.h"
#include "attach/cli/options.h"
#include "attach/cli/top.h"
#include "attach/cli/toptab.h"
#include "attach/kinds/kinds.h"
#include "common/sanitize.h"
#include "writer/top.h"

#define TOP_SCREEN_FUNCTIONS 200u /* the most rows a screen shows */
#define TOP_SCREEN_THREADS 64u

/* A line of at most cols bytes (no UTF-8 sequence cut), then, on a screen, erase to its end. */
static void put_line(struct buf *b, unsigned cols, int screen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put_line(struct buf *b, unsigned cols, int screen, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	size_t n;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = r < 0 ? 0 : (size_t)r < sizeof(line) ? (size_t)r : sizeof(line) - 1;
	if (cols && n > cols) {
		n = cols;
		while (n && ((unsigned char)line[n] & 0xc0) == 0x80)
			n--;
	}
	buf_append(b, line, n);
	buf_puts(b, screen ? "\033[K\n" : "\n");
}

static double pct(int64_t v, int64_t sum)
{
	return sum > 0 ? 100.0 * (double)v / (double)sum : 0.0;
}

/* A target-chosen name, short and with its controls escaped, in out. */
static const char *shown_name(const char *name, char *out, size_t cap)
{
	char shortname[512];

	sanitize_str(out, cap, top_short_name(name, shortname, sizeof(shortname)));
	return out;
}

static void put_header(const struct top_view *v, struct buf *b, unsigned cols, int screen)
{
	const struct options *o = v->o;
	char comm[80], rate[24] = "", value[40] = "";

	sanitize_str(comm, sizeof(comm), v->t->comm);
	if (kind_takes(o->kind) & KIND_TAKES_HZ)
		snprintf(rate, sizeof(rate), " %u Hz", o->hz);
	/* The value shown, when the type's name does not say it (heap: inuse_space). */
	if (v->vtype[0] && strcmp(v->vtype, o->kind->name))
		snprintf(value, sizeof(value), " %s", v->vtype);
	put_line(b, cols, screen, "pid %d (%s)  %s%s  %s%s  every %.3gs  [sort %s, %s]",
		 (int)v->t->pid, comm, o->kind->name, value, v->sampler[0] ? v->sampler : "-", rate,
		 (double)o->every_ns / 1e9, v->by_total ? "total" : "self",
		 v->span == TOPTAB_ALL ? "start" : "last");
	put_line(b, cols, screen,
		 "interval %u: samples %llu, lost %llu | start: samples %llu, lost %llu%s",
		 v->intervals, (unsigned long long)v->samples, (unsigned long long)v->lost,
		 (unsigned long long)v->samples_all, (unsigned long long)v->lost_all,
		 !v->paused ? "" : v->capturing ? "  PAUSING" : "  PAUSED");
}

static void put_functions(const struct top_view *v, struct buf *b, unsigned cols, int screen,
			  unsigned max)
{
	struct toptab_fn fns[TOP_SCREEN_FUNCTIONS];
	const char *col_self[TOPTAB_SPANS], *col_total[TOPTAB_SPANS];
	char name[512];
	int64_t sum[TOPTAB_SPANS];
	size_t i, n;

	n = toptab_functions(v->tab, v->span, v->filter, v->by_total, fns,
			     max < TOP_SCREEN_FUNCTIONS ? max : TOP_SCREEN_FUNCTIONS, sum);
	if (v->filter)
		put_line(b, cols, screen, "functions of thread %d:", (int)v->filter);
	/* The column sorted by in capitals: SELF% or TOTAL% under last or start. */
	for (i = 0; i < TOPTAB_SPANS; i++) {
		int sorted = (int)i == v->span;

		col_self[i] = sorted && !v->by_total ? "SELF%" : "self%";
		col_total[i] = sorted && v->by_total ? "TOTAL%" : "total%";
	}
	put_line(b, cols, screen, "  last %5s  %6s  start %5s  %6s  function", col_self[0],
		 col_total[0], col_self[1], col_total[1]);
	for (i = 0; i < n; i++)
		put_line(b, cols, screen, "       %5.1f  %6.1f        %5.1f  %6.1f  %s",
			 pct(fns[i].self[TOPTAB_INTERVAL], sum[TOPTAB_INTERVAL]),
			 pct(fns[i].total[TOPTAB_INTERVAL], sum[TOPTAB_INTERVAL]),
			 pct(fns[i].self[TOPTAB_ALL], sum[TOPTAB_ALL]),
			 pct(fns[i].total[TOPTAB_ALL], sum[TOPTAB_ALL]),
			 shown_name(fns[i].name, name, sizeof(name)));
	if (!n)
		put_line(b, cols, screen, "       (no samples%s)", v->paused ? ": paused" : "");
}

/* Each thread's share of the value; for cpu, also of one CPU over the span. */
static void put_threads(const struct top_view *v, struct buf *b, unsigned cols, int screen,
			unsigned max)
{
	struct toptab_thread th[TOP_SCREEN_THREADS];
	int cpu = !strcmp(v->vtype, "cpu") && !strcmp(v->vunit, "nanoseconds");
	char name[80];
	int64_t sum[TOPTAB_SPANS] = { 0, 0 };
	size_t i, n, all;

	all = toptab_threads(v->tab, TOPTAB_INTERVAL, th, TOP_SCREEN_THREADS);
	for (i = 0; i < all; i++) {
		sum[TOPTAB_INTERVAL] += th[i].value[TOPTAB_INTERVAL];
		sum[TOPTAB_ALL] += th[i].value[TOPTAB_ALL];
	}
	n = all < max ? all : max;
	/* The heap types' samples carry no thread: one row "0" would say nothing. */
	if (all == 1 && !th[0].tid) {
		put_line(b, cols, screen, "threads: %s samples do not say which thread", v->o->kind->name);
		return;
	}
	put_line(b, cols, screen, "threads (%zu)   share: last  start%s", all,
		 cpu ? "   CPU: last  start" : "");
	for (i = 0; i < n; i++) {
		char cpus[40] = "";

		if (cpu)
			snprintf(cpus, sizeof(cpus), "       %5.1f%% %5.1f%%",
				 v->dur_ns ? 100.0 * (double)th[i].value[TOPTAB_INTERVAL] / (double)v->dur_ns : 0.0,
				 v->dur_all_ns ? 100.0 * (double)th[i].value[TOPTAB_ALL] / (double)v->dur_all_ns : 0.0);
		sanitize_str(name, sizeof(name), th[i].name[0] ? th[i].name : "?");
		put_line(b, cols, screen, "%c %7d %-16.16s %5.1f%% %5.1f%%%s %s",
			 th[i].tid == v->filter && v->filter ? '>' : ' ', (int)th[i].tid, name,
			 pct(th[i].value[TOPTAB_INTERVAL], sum[TOPTAB_INTERVAL]),
			 pct(th[i].value[TOPTAB_ALL], sum[TOPTAB_ALL]), cpus,
			 th[i].tid ? "" : "(no tid label)");
	}
}

void top_draw_screen(const struct top_view *v, unsigned rows, unsigned cols, struct buf *b)
{
	unsigned avail, nthreads, nfn;

	buf_puts(b, "\033[H");
	if (rows < 10) {
		put_header(v, b, cols, 1);
		put_line(b, cols, 1, "(a terminal of %u rows is too small: 10 at least)", rows);
		buf_puts(b, "\033[J");
		return;
	}
	/* Header (2), a blank, column titles, a blank, the threads' title, the footer: 7. */
	avail = rows - 7 - (v->filter ? 1 : 0);
	nthreads = avail / 3;
	nfn = avail - nthreads;
	put_header(v, b, cols, 1);
	put_line(b, cols, 1, "%s", "");
	put_functions(v, b, cols, 1, nfn);
	/* Fewer functions than rows: the threads start where they end. */
	put_line(b, cols, 1, "%s", "");
	put_threads(v, b, cols, 1, nthreads);
	buf_puts(b, "\033[J");
	/* The footer on the last row. */
	buf_printf(b, "\033[%u;1H", rows);
	if (v->prompting)
		put_line(b, cols, 1, "thread id to show (empty: every thread): %s", v->entry);
	else if (v->msg[0])
		put_line(b, cols, 1, "%s", v->msg);
	else
		put_line(b, cols, 1, "keys: s self  t total  a span  p pause  f thread  q quit");
	/* No newline after the last row: it would scroll the screen. */
	if (b->len && b->data[b->len - 1] == '\n')
		b->len--;
}

void top_draw_text(const struct top_view *v, struct buf *b)
{
	put_header(v, b, 0, 0);
	put_functions(v, b, 0, 0, TOP_TEXT_FUNCTIONS);
	put_threads(v, b, 0, 0, TOP_TEXT_THREADS);
	put_line(b, 0, 0, "%s", "");
}
