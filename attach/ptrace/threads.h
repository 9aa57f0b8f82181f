#ifndef CPROF_THREADS_H
#define CPROF_THREADS_H
/*
 * threads — the target's threads as the tracer knows them: a table keyed by
 * tid, with the per-thread /proc descriptors kept open so that the sampling
 * path reads a thread's CPU clock or syscall state with one pread(2)
 * instead of open/read/close.
 *
 * Invariants:
 *  - a tid is in the table at most once; a thread is removed when the
 *    kernel reports its exit, and its descriptors are closed then;
 *  - descriptors are opened lazily and may be -1 (thread gone, or /proc
 *    refused); every reader copes with -1;
 *  - the table is owned by the tracer thread; nothing here is locked;
 *  - at most THREADS_MAX threads are tracked (the rest are counted).
 */
#include <stdint.h>
#include <sys/types.h>

#define THREADS_MAX 65536

/* thread.flags */
#define THREAD_HELD 1u         /* seized and asked to stop; its stop is not reaped yet */
#define THREAD_WANTED 2u       /* the current batch copies it when it stops */
#define THREAD_ASLEEP 4u       /* its last sample was read asleep; asleep_* are valid */
#define THREAD_READ 8u         /* the sampler read its clock this tick already */
#define THREAD_DEFERRED 16u    /* held; copied for session.defer_emit when its stop comes */
#define THREAD_CHARGED 32u     /* cpu: a sample found it running (its last stack is one) */
#define THREAD_TORN 64u        /* asked to stop though asleep: it kept waking while read */
#define THREAD_STACKED 128u    /* wall: a sample of this capture carried its stack */
#define THREAD_RAN 256u        /* wall: a stop of this capture found it running (a running stack) */

struct thread {
	pid_t tid;
	unsigned flags;
	int fd_schedstat;        /* /proc/PID/task/TID/schedstat */
	int fd_syscall;          /* /proc/PID/task/TID/syscall */
	int fd_comm;             /* /proc/PID/task/TID/comm */
	int fd_stat;             /* /proc/PID/task/TID/stat */
	uint64_t cpu_ns;         /* its CPU clock at the last look */
	uint64_t slices;         /* times it was put on a CPU, as of the last read of its clock */
	uint64_t slices_waited;  /* cpu: slices whose waits' CPU is in wait_ns already, or ours (a stop) */
	uint64_t wait_ns;        /* cpu: CPU its waits cost it (waitcost.h), kept out of cpu_pending */
	uint64_t cpu_pending;    /* CPU time used but not yet given to a sample */
	uint64_t last_sample_ns; /* monotonic time of its last sample */
	uint64_t ran_tick;       /* the sampler's tick when its CPU clock last moved; 0: never */
	uint64_t sample_tick;    /* the sampler's tick of its last sample; 0: none yet */
	uint64_t intr_ns;        /* when we asked it to stop */
	uint64_t intr_cpu_ns;    /* cpu: its CPU clock just before we asked (0: not read) */
	uint64_t intr_slices;    /* cpu: its slices at that look (later reads move t->slices) */
	uint64_t queued_ns;      /* time it waited for a CPU, as of the last read of its clock */
	uint64_t intr_queued_ns; /* ... at the look before our interrupt */
	uint64_t queued_sample_ns; /* wall: ... as of its last sample */
	uint64_t cpu_sample_ns;  /* wall: its CPU clock (cpu_ns) as of its last split sample */
	uint64_t cpu_unplaced;   /* wall: CPU it ran before any stop found it running (split_elapsed) */
	uint32_t ticks_unplaced; /* ... the flushed ticks that carried it */
	uint64_t scan_no;        /* the last /proc/PID/task read that listed it */
	uint64_t asleep_cpu;     /* its CPU clock when last read asleep */
	long asleep_nr;          /* the syscall it slept in then */
	uint32_t stops_asleep;   /* cpu: stops that found it asleep... */
	uint32_t stops_timed;    /* ... of them in a sleep its timer ends (waitcost_mix) */
	uint64_t vol, invol;     /* cpu: its voluntary and other switches at the last read of status */
	uint64_t switches_ns;    /* ... when (0: never read) */
	uint32_t vol_permille;   /* ... the share of its slices that were waits (1000 until read) */
	char last_state;         /* the state letter of its last sample, which a repeat shows */
	uint64_t ran_ns;         /* its last stop found running's labels time (policies.c) */
	char name[16];
};

struct threads {
	pid_t pid;
	struct thread **slots; /* open addressing by tid */
	uint32_t nslots;
	uint32_t count;
	uint64_t overflow;     /* threads not tracked because of THREADS_MAX */
	uint64_t generation;   /* changes whenever a thread is added or removed */
};

/* An empty table for process pid. 0 or -1. */
int threads_init(struct threads *ts, pid_t pid);

/*
 * Close every thread's cached /proc descriptors (they are opened again
 * when next read); what a read does when the process is out of them.
 */
void threads_close_all_files(struct threads *ts);

/* Close every descriptor and free the table. */
void threads_release(struct threads *ts);

/* The thread with tid, or NULL. */
struct thread *threads_get(struct threads *ts, pid_t tid);

/* Add tid (or return the existing entry); NULL when full or out of memory. */
struct thread *threads_add(struct threads *ts, pid_t tid);

/* Remove tid and close its descriptors. */
void threads_remove(struct threads *ts, pid_t tid);

/*
 * Copy every thread's tid into out (at most max); returns the count. The
 * sampler iterates this copy and looks each tid up again before use, since
 * handling a stop may remove (and free) a thread while it works.
 */
uint32_t threads_tids(struct threads *ts, pid_t *out, uint32_t max);

/*
 * Read t's voluntary and involuntary context switches (status: a few KiB,
 * opened and closed each time: read about once a second). 0 or -1.
 */
int thread_read_switches(struct threads *ts, struct thread *t, uint64_t *vol, uint64_t *invol);

/*
 * Its CPU time in ns from schedstat; 0 or -1 (thread gone). Also sets
 * t->slices and t->queued_ns from the same read.
 */
int thread_read_cpu(struct threads *ts, struct thread *t, uint64_t *ns);

/*
 * Its syscall state without stopping it. Returns 1 when it is running (or
 * runnable), 0 when it sleeps, with *nr the syscall number (-1 when it
 * sleeps outside a syscall) and *sp, *pc its user stack pointer and
 * program counter; -1 when the thread is gone or the file is unreadable.
 */
int thread_read_syscall(struct threads *ts, struct thread *t, long *nr, uint64_t *sp,
			uint64_t *pc);

/*
 * Close t's /proc descriptors (they reopen at the next read): for a pass
 * that reads each thread once, where keeping them would only grow the
 * descriptor table.
 */
void thread_close_files(struct thread *t);

/* Refresh t->name from comm. 0 or -1. */
int thread_read_name(struct threads *ts, struct thread *t);

/*
 * Its scheduler state letter from stat ('R', 'S', 'D', 'T', 't', 'Z'...),
 * or '?'. The same read refreshes t->name, and sets *named, unless the
 * name holds a character comm would escape: then thread_read_name() is
 * still due (one /proc file read per thread instead of two).
 */
char thread_read_state(struct threads *ts, struct thread *t, int *named);

#endif
