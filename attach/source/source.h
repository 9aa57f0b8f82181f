#ifndef CPROF_SOURCE_H
#define CPROF_SOURCE_H
/*
 * source — where a profile's data comes from: the ptrace source (stop and
 * copy threads on a clock, ptracesrc.c), the perf source (the kernel samples
 * running threads into rings, perfsrc.c), the choice between those two for
 * the cpu kind (auto.c), the off-CPU source (the kernel's switch and
 * wake-up events, offcpusrc.c), or the shim's segment (read libcprof.so's
 * buckets from outside, segsrc.c). A source
 * turns one request into one profile: the command line says what to
 * capture (a struct capture_req, built from the kinds table and the
 * options) and never learns how.
 *
 * Invariants:
 *  - a source never includes the command line or the kinds table: all it
 *    needs is in the request, and the kind's behaviour comes as the
 *    policy (ptrace/sampler.h) or the view (views.h) the request names;
 *  - the target is left as found on every path: nothing stays traced or
 *    stopped once capture() returns;
 *  - unwinding and symbolization happen on the calling thread, never while
 *    a target thread is stopped; source lines are added once the samples
 *    are in (recorder_lines() with the request's debug, before a recorder
 *    is freed).
 */
#include <stddef.h>
#include <stdint.h>

#include "attach/source/result.h"
#include "common/exitcode.h"

struct debuginfo;
struct linecache;
struct policy;
struct profile;
struct shim_view;
struct target;

/* Labels a sample carries. */
#define LABEL_THREAD 1u  /* "thread": the thread's name */
#define LABEL_TID 2u     /* "tid": its id (numeric) */
#define LABEL_STATE 4u   /* "state": running, sleeping, disk wait, stopped... */
#define LABEL_SYSCALL 8u /* "syscall": the call a sleeping thread sleeps in */
#define LABEL_PID 16u    /* "pid": its process (numeric); --children */
#define LABEL_PROCESS 32u /* "process": its process's name; --children */
#define LABEL_WAKER 64u  /* "waker" and "waker_tid": who ended an off-CPU wait */

/* The LABEL_* bit of the label called key, or 0 when no source adds it by bit. */
unsigned capture_label_bit(const char *key);

struct profile_label_in;

/*
 * The thread, tid, pid and process labels that mask asks for, in that
 * order, into l (room for CAPTURE_THREAD_LABELS, zeroed here): how many.
 * A NULL or empty name or comm reads "?". The strings are not copied.
 */
#define CAPTURE_THREAD_LABELS 4
size_t capture_thread_labels(unsigned mask, const char *name, pid_t tid, pid_t pid,
			     const char *comm, struct profile_label_in *l);

/* The profile's declared types, Go's names and units. */
struct sample_types {
	const char *sample[4][2];   /* up to four (type, unit) pairs */
	const char *period_type[2];
	const char *default_type;   /* default_sample_type, or NULL for the last */
};

/*
 * Draw (or, with done, erase) a live progress line: elapsed of total,
 * samples, threads. Called a few times a second while a window runs.
 */
typedef void capture_progress_fn(uint64_t elapsed_ns, uint64_t total_ns, uint64_t samples,
				 uint64_t threads, int done);

/* Which sampler a clock-driven CPU capture uses (--sampler). */
enum sampler_wish {
	SAMPLER_AUTO,   /* perf events where the kernel allows them, else ptrace */
	SAMPLER_PERF,   /* perf events, or an error naming what refused them */
	SAMPLER_PTRACE, /* stop and copy threads */
};

/* One capture, as the command line asks for it. */
struct inject;

struct capture_req {
	const struct target *t;
	const char *what;                 /* the profile type's name, for messages */
	const struct sample_types *types;
	const struct policy *policy;      /* the ptrace source: which threads, what weight */
	const struct shim_view *view;     /* the segment source: which buckets, what values */
	unsigned labels;                  /* LABEL_* the samples carry */
	int raw;                          /* the segment: raw sample counts, not estimates */
	int runs_only;                    /* only running code counts: say when children did it */
	uint64_t duration_ns;
	int duration_given;               /* -d: a window (a delta, for the segment) */
	uint64_t period_ns;
	size_t stack_cap;
	int stack_cap_given;              /* --stack-size was on the command line */
	enum sampler_wish sampler;        /* --sampler (a SOURCE_SAMPLER source reads it) */
	const char *how;                  /* set by auto.c: the sampler and why, for the capture line */
	int children;                     /* the process and all its descendants */
	int kernel;                       /* kernel frames where the kernel gives them (not --no-kernel) */
	uint64_t min_wait_ns;             /* offcpu: shorter waits go to one frame per thread */
	int waker_stacks;                 /* offcpu: the waker's stack above a "[woken by]" frame */
	int quiet;
	capture_progress_fn *progress;    /* the live progress line, or NULL */
	struct debuginfo *debug;          /* the run's debug files for source lines; NULL: none */
	struct linecache *line_cache;     /* lines resolved in earlier runs; NULL: none */
	struct inject *inject;            /* --inject: the injection kept across a series; NULL: none */
	uint64_t inject_rate;             /* --inject-rate, 0: the shim's default */
};

/*
 * Capture what r asks into a new profile (*out; the caller frees it) and
 * fill rep. Returns EXIT_OK, or another EXIT_* code after printing why
 * (*out NULL).
 */
typedef int capture_fn(const struct capture_req *r, struct profile **out,
		       struct capture_report *rep);

#define SOURCE_CLOCK 1u    /* samples on a clock: --hz applies */
#define SOURCE_CHILDREN 2u /* can take a process's descendants too (--children) */
#define SOURCE_SAMPLER 4u  /* chooses between samplers: --sampler applies */
#define SOURCE_WAITS 8u    /* weighs waits off the CPU: --min-wait, --waker-stacks apply */

struct source {
	const char *name;
	capture_fn *capture;
	unsigned can;              /* SOURCE_* */
};

extern const struct source source_ptrace;  /* ptrace.c */
extern const struct source source_auto;    /* auto.c: perf or ptrace, by --sampler and the kernel */
extern const struct source source_segment; /* segsrc.c */

/*
 * Where the libcprof.so of this cprof-attach is: beside it, or in ../lib
 * (installed), resolved; else the installed default path (which may not
 * exist: the caller checks when it matters).
 */
void source_shim_path(char *out, size_t cap);
extern const struct source source_offcpu;  /* offcpusrc.c: switch and wake-up events */

/*
 * The run's cache of debug files for source lines (unwind/debuginfo.h),
 * kept across the captures of a series and handed to each in
 * capture_req.debug; NULL when out of memory. A deliberate pair.
 */
struct debuginfo *capture_debug_new(void);
void capture_debug_free(struct debuginfo *d);

/*
 * The per-user cache of source lines by build ID (unwind/linecache.h) in
 * its default directory, for capture_req.line_cache; NULL when there is
 * none to name (no absolute XDG_CACHE_HOME or HOME) or out of memory. A
 * deliberate pair; the free writes nothing (recorder_lines() flushes).
 */
struct linecache *capture_line_cache_new(void);
void capture_line_cache_free(struct linecache *c);

/* Declare r's sample types, period type (with period) and default type in prof. 0 or -1. */
int capture_declare(const struct capture_req *r, struct profile *prof, int64_t period);

/*
 * A capture could not begin on t for errno e: a process that exited
 * meanwhile (ESRCH, ENOENT, or gone now) is EXIT_GONE ("exited before
 * anything was captured": not a refusal, and a short-lived job's normal
 * end); anything else target_attach_error()'s message and EXIT_ATTACH.
 * The message is printed; the exit code returned.
 */
struct target;
int capture_begin_failed(const struct target *t, int e);

/* cprof-attach's own CPU time so far, in seconds. */
double capture_self_cpu(void);

/*
 * The stop signals for a loop that polls: capture_stop_open() gives a
 * descriptor that becomes readable when one comes (the watchdog's, or
 * without one a nonblocking signalfd of its own; -1 on failure);
 * capture_stop_take() says which signal came (0: none yet);
 * capture_stop_close() closes what open made.
 */
int capture_stop_open(void);
int capture_stop_take(int fd);
void capture_stop_close(int fd);

/*
 * Sleep until monotonic time until, reading stop signals from sigfd (a
 * signalfd, or watchdog_fd()), or when sigfd < 0 from the watchdog (a
 * signalfd of its own without one). Returns 0 at until, 1 when
 * a stop signal came (its number in *sig when sig is not NULL), 2 when
 * process pid exited.
 */
int capture_wait(pid_t pid, int sigfd, uint64_t until, int *sig);

#endif
