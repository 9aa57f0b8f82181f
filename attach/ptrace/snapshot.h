#ifndef CPROF_SNAPSHOT_H
#define CPROF_SNAPSHOT_H
/*
 * snapshot — one thread's state as the tracer copied it, and the bounded
 * queue that carries snapshots from the tracer thread to the thread that
 * unwinds them.
 *
 * Invariants:
 *  - a snapshot owns its stack bytes (one malloc'd block of the stack cap,
 *    cut to what the copy filled once it is made, that every region of
 *    img points into; all regions together hold at most the cap);
 *  - the queue holds at most QUEUE_MAX_BYTES of stack bytes and
 *    QUEUE_MAX_ITEMS snapshots; a push past either fails and the tracer
 *    counts the sample as lost — the tracer never waits for the consumer,
 *    because a waiting tracer would delay the target's signals;
 *  - after queue_close() pops drain what is left, then return NULL.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwinder.h"

#define QUEUE_MAX_BYTES (256u << 20)
#define QUEUE_MAX_ITEMS 200000u

/* How the registers were obtained. */
#define SNAP_STOPPED 1  /* thread stopped by ptrace: every register */
#define SNAP_SYSCALL 2  /* thread blocked in a syscall, not stopped: sp and pc */
#define SNAP_REPEAT 3   /* thread has not run since its last sample: same stack, no bytes */
#define SNAP_LOST 4     /* running, but did not stop in time: no stack, said so */
#define SNAP_MARKER 6   /* CPU no stack can carry, under one named frame (marker); tid 0: no thread */
/* The marker of CPU of threads that ended, none of them sampled (every sampler's). */
#define SHORT_LIVED_FRAME "[short-lived threads]"

/* snapshot.state of a thread that was waiting for a CPU (ours; /proc says 'R'). */
#define SNAP_STATE_QUEUED 'q'

struct kstack;

struct snapshot {
	struct snapshot *next;
	pid_t tid;
	pid_t pid;             /* its process */
	const char *comm;      /* its process's name (the sampler's, outlives the snapshot) */
	char name[16];
	char state;            /* scheduler state letter, '?' when unknown */
	int how;               /* SNAP_* */
	long syscall;          /* syscall it is blocked in, or -1 */
	uint64_t time_ns;      /* monotonic time of the copy */
	int64_t weight;        /* ns of CPU or wall time the sample stands for */
	uint32_t count;        /* ticks the sample stands for (SNAP_REPEAT may stand for many) */
	int slept;             /* SNAP_STOPPED: the stop found it asleep in a syscall... */
	long slept_nr;         /* ... this one */
	int slid;              /* SNAP_STOPPED: it ran on to a later syscall: not where it was */
	int ran_on;            /* ... or to one that our stop broke at once (a sleep's entry) */
	int ran_to_sleep;      /* ... or into a timer sleep's entry, on any host */
	int in_timer_sleep;    /* SNAP_STOPPED: inside a timer sleep's call (asleep or entering) */
	int in_call;           /* SNAP_STOPPED: inside a system call (else in user code) */
	int ran_here;          /* wall: snapshot_ran_here(), its stack a running one (ptracesrc.c) */
	uint64_t ran_ns;       /* the time whose program labels its CPU carries: where the
				  thread ran, by the policy (0: time_ns) */
	uint64_t asked_ns;     /* SNAP_STOPPED: when we asked it to stop (0: unknown) */
	int queued;            /* SNAP_STOPPED: off a CPU when asked, mostly waiting for one */
	int repeat_running;    /* SNAP_REPEAT: of the thread's last stack found running */
	char repeat_state;     /* SNAP_REPEAT: this state, not the last sample's (0) */
	int split;             /* wall: weight is split by the thread's clocks (below) */
	uint64_t split_cpu;    /* ... ns it ran since its last sample: its last running stack's */
	uint64_t split_queued; /* ... ns it waited for a CPU: runnable, at this stack */
	long rest_syscall;     /* ... the rest was asleep: in this call (-1: unknown) */
	const char *marker;    /* SNAP_MARKER: the frame's name (a static string) */
	struct thread_image img;
	unsigned char *stack;  /* owned; img.stack[i].bytes point into it */
	struct kstack *kstack; /* owned, or NULL: SNAP_SYSCALL's kernel stack (kstack.h) */
};

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct snapshot *head, *tail;
	size_t items, bytes;
	int producers;         /* queue_close() calls still due before it closes */
	int closed;
};

int queue_init(struct queue *q);
void queue_release(struct queue *q);

/* Append s; 0, or -1 when full or closed (s is not taken). */
int queue_push(struct queue *q, struct snapshot *s);

/* Whether every producer has closed (snapshots may still be queued). */
int queue_closed(struct queue *q);

/* Take the oldest snapshot, waiting while empty; NULL once closed and empty. */
struct snapshot *queue_pop(struct queue *q);

/*
 * Like queue_pop(), but wait at most ms milliseconds; NULL on a timeout
 * too, with *closed telling the two apart.
 */
struct snapshot *queue_pop_timed(struct queue *q, unsigned ms, int *closed);

/*
 * One more producer (queue_init() counts one), so that the queue closes
 * only when every producer has called queue_close(). 0, or -1 when it is
 * closed already.
 */
int queue_add_producer(struct queue *q);

/* This producer is done; the last one closes the queue and wakes the consumer. */
void queue_close(struct queue *q);

/* Free a snapshot and its stack bytes. */
void snapshot_free(struct snapshot *s);

/*
 * Whether a stop shows where the thread ran: found running where it was
 * (not slid to a later call), or waiting for a CPU in user code, where it
 * was preempted (one woken from a sleep waits at the sleep's return).
 */
static inline int snapshot_ran_here(const struct snapshot *s)
{
	return s->how == SNAP_STOPPED && !s->slid &&
	       (s->state == 'R' || (s->state == SNAP_STATE_QUEUED && !s->in_call));
}

#endif
