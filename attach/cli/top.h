#ifndef CPROF_TOP_CMD_H
#define CPROF_TOP_CMD_H
/*
 * top — `cprof-attach top -p PID`: a live view of where a process spends
 * its time (or allocates, or waits). Each interval is one capture of the
 * target for that interval, the same capture every command runs, folded
 * into the tables of the last interval and since the start (toptab.h);
 * on a terminal a screen redrawn each interval and at each key, otherwise
 * a block of plain text per interval.
 *
 * Invariants:
 *  - between intervals, and while paused, the target is not touched: a
 *    capture attaches and detaches as every capture does, so however top
 *    ends (q, Ctrl-C, SIGTERM, SIGKILL) no thread is left stopped;
 *  - the terminal is given back on every way out (tty.h);
 *  - what the target named (functions, threads) is sanitized before it is
 *    printed, and no line is wider than the terminal;
 *  - the view's state is read and changed under its lock only: the key
 *    thread and the capture loop both draw.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"

struct options;
struct target;
struct toptab;

#define TOP_TEXT_FUNCTIONS 15u /* lines of functions in a plain-text block */
#define TOP_TEXT_THREADS 10u
#define TOP_FRAME_MAX (256u << 10) /* bytes of one drawn frame */

struct top_view {
	pthread_mutex_t lock;
	const struct options *o;
	const struct target *t;
	struct toptab *tab;
	int by_total;      /* sort by total (else self) */
	int span;          /* the span sorted by: TOPTAB_INTERVAL or TOPTAB_ALL */
	int paused;        /* no capture until resumed */
	int capturing;     /* an interval's capture is in flight (paused: "PAUSING" until it ends) */
	pid_t filter;      /* the thread shown (0: every thread) */
	int prompting;     /* reading a tid after f */
	char entry[12];    /* the tid typed so far */
	char msg[96];      /* a line for the footer, until the next key */
	unsigned intervals;
	uint64_t samples, lost, samples_all, lost_all;
	uint64_t dur_ns, dur_all_ns;
	char sampler[16];
	char vtype[24], vunit[24]; /* the value shown: cpu nanoseconds, inuse_space bytes... */
};

/* Run top on t as o asks (commands.c's row). An EXIT_* code. */
int top_run(const struct options *o, const struct target *t);

/*
 * The screen for rows x cols into b: "\033[H", lines each ended by
 * "\033[K", "\033[J", the footer on the last row; view locked.
 */
void top_draw_screen(const struct top_view *v, unsigned rows, unsigned cols, struct buf *b);

/* One plain-text block for the interval just folded, no escape sequence; view locked. */
void top_draw_text(const struct top_view *v, struct buf *b);

#endif
