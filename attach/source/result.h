#ifndef CPROF_RESULT_H
#define CPROF_RESULT_H
/*
 * result — what one capture reports besides its profile: the window it
 * covers, how the target fared, and each source's own figures. Filled by
 * a source (source.h), read by the command line's report and output.
 *
 * Invariants:
 *  - a source zeroes it first, and fills the common part on every path
 *    that returns EXIT_OK;
 *  - ptrace is set exactly when sm and rec hold a ptrace capture's
 *    figures, perf exactly when pf and rec hold a perf capture's;
 *  - sampler is set by a source that chose between samplers (the cpu
 *    kind's), with sampler_why saying why, in one phrase.
 */
#include <stdint.h>

#include "attach/ptrace/sampler.h"
#include "attach/source/record.h"

/* What the perf source saw (source/perf.c). */
struct perf_stats {
	int scope;                 /* PERF_SCOPE_CPU or PERF_SCOPE_TASK (attach/perf/events.h) */
	uint64_t samples;          /* the target's samples */
	uint64_t others;           /* CPU scope: other processes' samples, passed over */
	uint64_t lost;             /* samples the kernel dropped: a ring was full */
	uint64_t throttled;        /* times the kernel throttled the events */
	uint64_t no_regs;          /* the target's samples without user registers */
	uint64_t kernel_chains;    /* samples with kernel frames (their call chain) */
	uint64_t exiting;          /* ... of threads past their exit (no tid): a marker each */
	uint64_t corrupt;          /* times a ring held garbage (skipped) */
	uint64_t drains;           /* passes over the rings */
	uint64_t threads_opened;   /* task scope: threads given events when the capture began */
	uint64_t ring_bytes;       /* each CPU's ring (data area) */
	uint32_t rings;
	uint32_t stack_bytes;      /* user stack copied per sample */
	uint64_t altstack;         /* samples on an alternate signal stack given the stack under it */
	uint64_t altstack_stale;   /* ... refused: the thread had moved on (altstack.h) */
	uint64_t holes;            /* samples given the stack above an untouched page (stackhole.h) */
	uint64_t holes_stale;      /* ... refused: the copy's end had changed */
	uint64_t cpu_process_ns;   /* the process's CPU clock over the window */
	uint64_t cpu_sampled_ns;   /* CPU the samples stand for, by their periods */
	uint64_t cpu_ended_ns;     /* CPU of threads that ended during the window (less exiting_ns) */
	uint64_t cpu_unsampled_ns; /* live threads with CPU and no sample (a marker each) */
	uint64_t cpu_short_ns;     /* ended threads' CPU, none sampled: [short-lived threads] */
	uint64_t cpu_unseen_ns;    /* task scope: live threads' CPU their events did not see (a marker each) */
	uint64_t cpu_waits_ns;     /* CPU scope: the kernel's side of live threads' waits (a marker each) */
	uint64_t wait_cost_ns;     /* ... one wait's CPU as measured here (0: not estimated) */
	uint64_t timer_cost_ns;    /* ... one timer sleep's, the most a wait is charged */
	uint64_t threads_scaled;   /* threads whose samples were scaled to their clocks */
	double scale_min, scale_max; /* the factors, clock over samples */
};

/* An off-CPU capture's figures (offcpusrc.c). */
struct offcpu_stats {
	uint64_t switches;         /* switch-outs of the target's threads */
	uint64_t samples;          /* switch-out samples (stacks) read */
	uint64_t waits;            /* waits made samples (or counted short) */
	uint64_t short_waits;      /* ... under --min-wait, one frame per thread */
	uint64_t no_stack;         /* waits whose stack was lost (ring full, throttled) */
	uint64_t unswitched;       /* threads never switched, asleep (or queued) throughout */
	uint64_t asleep_stacks;    /* threads off the CPU at the start whose stack was read then */
	uint64_t wakes, woken;     /* wake-ups read; waits with a waker */
	uint64_t lost_switches;    /* switch records the kernel dropped: time not counted */
	uint64_t lost_stacks;      /* switch-out samples dropped */
	uint64_t lost_wakes;
	uint64_t picks, lost_picks; /* our threads' picks read (CPU-wide sched_switch); dropped */
	uint64_t unpicked;         /* waits ended at their switch-in record though picks were read */
	uint64_t dropped;          /* events past the queue's cap */
	uint64_t throttled;        /* times the kernel throttled the switch-out samples */
	uint64_t no_regs, corrupt;
	uint64_t kernel_stacks;    /* stacks with kernel frames */
	uint64_t wakers_unfollowed; /* threads past the wake-up filter's cap */
	uint64_t threads_opened;
	uint32_t stack_bytes;
	int tracepoint;            /* the switch-outs came from sched_switch (states told apart) */
	int filter_failed;         /* the kernel refused the wake-up filter */
};

struct capture_report {
	/* Every source fills these. */
	uint64_t start_real_ns;    /* when the capture began, ns since the epoch */
	uint64_t duration_ns;      /* the window the profile covers */
	uint64_t samples;          /* samples taken (stacks read from the shim) */
	uint64_t threads;          /* distinct threads sampled; 0 when not applicable */
	uint64_t processes;        /* --children: processes traced (the root and descendants) */
	int gone, execed;          /* the target exited / exec'd during the capture */
	int stop_signal;           /* SIGINT/SIGTERM ended the capture early, or 0 */
	int lost_access;           /* the right to trace the target was lost mid-capture */
	double cpu_self_s;         /* cprof-attach's own CPU time */
	/* Which sampler took the samples, and why ("perf", "ptrace"; NULL: no choice made). */
	const char *sampler;
	char sampler_why[200];
	/* The ptrace source fills these (ptrace set). */
	int ptrace;
	struct sampler_results sm;
	struct record_stats rec;
	/* The perf source fills these (perf set). */
	int perf;
	struct perf_stats pf;
	/* The shim's segment. */
	uint64_t seg_torn, seg_dropped;
	/* An off-CPU capture's figures, when offcpu: */
	int offcpu;
	struct offcpu_stats off;
};

#endif
