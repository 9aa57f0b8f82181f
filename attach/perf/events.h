#ifndef CPROF_PERF_EVENTS_H
#define CPROF_PERF_EVENTS_H
/*
 * events — the perf_event engine: a software clock event on every CPU,
 * each CPU's samples in one mmap'd ring, and the walk over the rings.
 * The kernel takes the samples (registers and a copy of the user stack,
 * in the interrupted thread's own context): nothing is stopped, traced or
 * signalled.
 *
 * Two scopes, one ring per CPU in both:
 *  - PERF_SCOPE_CPU: one cpu-clock event per CPU for every task (pid -1),
 *    whose samples are filtered by process. The period counts the CPU's
 *    time, whoever runs, so a thread that lives for less than one period
 *    is still sampled in proportion to its CPU (a per-task counter starts
 *    afresh in each new thread and never reaches the period). Needs
 *    CAP_PERFMON (or CAP_SYS_ADMIN) or kernel.perf_event_paranoid <= 0.
 *  - PERF_SCOPE_TASK: a task-clock event per thread of the target and per
 *    CPU, inherited by the threads they create (inherit_thread where the
 *    kernel has it), redirected into the CPU's ring; allowed to the
 *    target's own user when perf_event_paranoid <= 2. Threads shorter
 *    than a period are counted by the kernel but never sampled.
 *
 * Invariants:
 *  - perf_events_init() leaves nothing open when it fails, and the
 *    events start disabled: perf_events_enable() starts every one, so the
 *    window begins at one instant;
 *  - records are read only through ring.c's checks; a ring's tail is
 *    published (given back to the kernel) only after its records were
 *    handled, so a record handed out in place is not overwritten meanwhile;
 *  - descriptors are close-on-exec; nothing here prints.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/perf/ring.h"

#define PERF_SCOPE_TASK 1
#define PERF_SCOPE_CPU 2

/* The x86_64 user registers a sample carries: ax..ip and r8..r15 (no flags, no segments). */
#define PERF_REGS_MASK 0xff01ffull

/*
 * What an event samples (perf_cfg.event). The switch events are per
 * thread (PERF_SCOPE_TASK) and kernel-mode: they need exclude_kernel 0.
 */
enum perf_event_what {
	PERF_EVENT_CLOCK,      /* a sample every period_ns of CPU (the cpu kind) */
	PERF_EVENT_SWITCH_OUT, /* a sample at each switch-out: the sched_switch tracepoint
				  (tp_id, with its fields as raw data) or, with tp_id 0, the
				  context-switches software event */
	PERF_EVENT_SWITCH_TIMES, /* no samples: a PERF_REC_SWITCH at each switch in and out */
	PERF_EVENT_WAKING,     /* CPU scope: a sample at each sched_waking (tp_id), taken in
				  the waker's context, the wakee's tid in the raw data */
	PERF_EVENT_PICKS,      /* CPU scope: a sample at each sched_switch (tp_id), the raw
				  data only (no stack, no chain): who was picked, when */
};

struct perf_cfg {
	pid_t pid;            /* the target process */
	int scope;            /* PERF_SCOPE_* */
	enum perf_event_what event;
	uint64_t tp_id;       /* the tracepoint's id (tracefs), or 0 */
	uint64_t period_ns;   /* a sample every this much CPU time */
	uint32_t stack_bytes; /* user stack copied per sample: a multiple of 8, <= PERF_STACK_MAX */
	int exclude_kernel;   /* sample user mode only (what perf_event_paranoid 2 allows) */
	int kernel_chain;     /* each sample's kernel call chain too (not with exclude_kernel) */
	size_t ring_bytes;    /* wanted data area per CPU; less is taken when locked memory is short */
};

struct perf_cpu_ring {
	int cpu;
	int fd;               /* the event that owns the mapping */
	void *base;           /* the mapping: the control page, then the data */
	size_t map_len;
	struct perf_ring ring;
};

struct perf_events {
	struct perf_cfg cfg;
	struct perf_layout layout;
	unsigned chain_max;          /* sample_max_stack: PERF_CHAIN_MAX or the sysctl's, if less */
	struct perf_cpu_ring *rings; /* the online CPUs' */
	int nrings;
	int slots;            /* rings allocated */
	int *fds;             /* every event (ring owners too), for enable and disable */
	size_t nfds, capfds;
	unsigned char *scratch; /* PERF_REC_MAX bytes: a record that wraps */
	uint64_t threads;     /* PERF_SCOPE_TASK: threads given their own events */
	size_t ring_bytes;    /* the data area each ring got */
	int inherit_thread;   /* the kernel took inherit_thread (forks are not followed) */
	const char *failed;   /* what failed: "perf_event_open", "mmap"... */
};

/*
 * Open the events cfg asks for, map their rings. 0, or -1 with errno set
 * (the kernel's answer: EACCES or EPERM refused, ENOENT/ENOSYS/EOPNOTSUPP
 * not supported, EMFILE too many descriptors, ESRCH the target is gone)
 * and ev->failed naming the step.
 */
int perf_events_init(struct perf_events *ev, const struct perf_cfg *cfg);

/* Start or stop every event. 0 or -1. */
int perf_events_enable(struct perf_events *ev);
int perf_events_disable(struct perf_events *ev);

/*
 * Give every event a new sampling period (ns) from now on: the clock
 * starts a fresh period at once (the current one's elapsed part is not
 * sampled). 0, or -1 when an event refused it.
 */
int perf_events_set_period(struct perf_events *ev, uint64_t period_ns);

/*
 * Give every event a tracepoint filter (PERF_EVENT_IOC_SET_FILTER, the
 * kernel's filter language): records it rejects are never written.
 * 0, or -1 when an event refused it.
 */
int perf_events_filter(struct perf_events *ev, const char *filter);

/* Close every event and unmap every ring. */
void perf_events_release(struct perf_events *ev);

/* A record handler; rec points at its header, len bytes. */
typedef void perf_record_fn(void *ctx, const unsigned char *rec, size_t len);

/*
 * Hand every record now in the rings to fn, ring by ring, and give each
 * ring's space back to the kernel after its records. Returns the number
 * of records.
 */
uint64_t perf_events_drain(struct perf_events *ev, perf_record_fn *fn, void *ctx);

/*
 * Hand every record now in the rings to fn without taking them: the next
 * drain hands them over again. Records are ordered within a ring, not
 * across, so a record one ring holds can be looked for before the others
 * are drained (an exec before the samples of the new program).
 */
void perf_events_scan(struct perf_events *ev, perf_record_fn *fn, void *ctx);

/* Times a ring held garbage and was skipped to its head (ring.h). */
uint64_t perf_events_corrupt(const struct perf_events *ev);

#endif
