#ifndef CPROF_SAMPLER_H
#define CPROF_SAMPLER_H
/*
 * sampler — the tracer thread: attach, then on every tick of the sampling
 * clock pick the threads the profile type wants, sample them and queue the
 * snapshots; between ticks answer the target's stops at once. When the
 * thread function returns, the thread exits and the kernel detaches the
 * target (see session.h).
 *
 * Invariants:
 *  - the sampler never waits for the consumer: a full queue loses samples
 *    and counts them;
 *  - a sample's weight is the thread's own CPU time (cpu) or elapsed time
 *    (wall) since its previous sample, so nothing is counted twice and
 *    nothing is lost when a tick is late; CPU used while a thread could
 *    not be stopped is carried to its next sample;
 *  - the results are written by the tracer thread and read by the caller
 *    only after pthread_join().
 */
#include <stdint.h>
#include <sys/types.h>

#include "attach/engine/session.h"
#include "attach/engine/snapshot.h"

struct kind;

#define HOT_MAX 4096 /* busy threads read every tick; more are read with the cold ones */

struct sampler {
	/* Set by the caller. */
	pid_t pid;
	const char *comm;
	int root;                 /* the process asked for (not a --children descendant) */
	int *stop_all;            /* shared by a --children capture's tracers, or NULL */
	const struct kind *kind;
	uint64_t period_ns;
	uint64_t duration_ns;
	size_t stack_cap;
	struct stack_hints *hints;
	int quiet;
	struct queue *queue;

	/* Results. */
	int attach_errno;         /* nonzero: attaching failed with it */
	int gone, execed, stop_signal;
	int lost_access;          /* the right to trace it was lost mid-capture */
	uint64_t start_real_ns, start_mono_ns, end_mono_ns;
	uint64_t samples;         /* snapshots queued */
	uint64_t lost;            /* snapshots dropped: queue full */
	uint64_t ticks, ticks_missed;
	uint64_t cpu_unattributed_ns; /* CPU used that no sample could carry */
	int niced;                /* the tracer thread runs at a raised priority */
	uint64_t found_asleep;    /* cpu: stops that found the thread asleep (carried on) */
	uint64_t threads_read;    /* per-thread CPU clock reads (cost follows the busy ones) */
	/* The CPU policy's bookkeeping. */
	uint64_t proc_cpu;        /* the process's CPU clock at the last tick */
	uint64_t unexplained_ns;  /* process CPU the thread clocks have not explained (cumulative) */
	uint64_t explained_at_scan; /* unexplained_ns right after the last read of every thread */
	uint64_t full_scan_ns;    /* when every thread was last read */
	uint64_t tids_generation; /* the thread table's generation the tid list holds */
	uint32_t ntids;
	uint32_t running;         /* threads whose clock moved at the last tick */
	int rescan_due;           /* re-read /proc/PID/task after this tick */
	pid_t hot[HOT_MAX];       /* threads busy lately: read every tick */
	uint32_t nhot;
	uint64_t hot_generation;  /* the thread table's generation the list was built from */
	uint64_t wall_generation; /* wall: the generation whose new threads were all read */
	uint64_t cold_slack_ns;   /* unexplained CPU per running thread before a full read */
	uint64_t prev_tick_ns;    /* when the last tick's work ended */
	uint64_t pause_p50_ns, pause_p99_ns;
	struct session_stats stats;
};

/* The tracer thread's body; arg is a struct sampler. */
void *sampler_main(void *arg);

#endif
