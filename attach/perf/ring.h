#ifndef CPROF_PERF_RING_H
#define CPROF_PERF_RING_H
/*
 * ring — reading perf_event records out of a ring buffer, and the
 * records themselves: samples (tid, time, period, the user registers, a
 * copy of the user stack), lost-record counts, thread names, throttling.
 * Pure code over bytes: no system call, so that the unit tests and the
 * fuzzer drive it with any bytes (events.c maps the real rings).
 *
 * Invariants:
 *  - everything in the ring is untrusted: the kernel writes it, but we
 *    sized it and a bug or a hostile co-mapper could leave anything there.
 *    Every length is checked against what remains before it is used; a
 *    record that does not fit, or a head that runs more than the ring's
 *    size ahead of the tail, is "corrupt": the reader skips to the head
 *    and counts it, and never reads outside the ring;
 *  - a record is handed out in place when it is contiguous, or copied
 *    into the reader's scratch buffer when it wraps past the end; in place
 *    or copied, it stays valid until the next ring_next() or ring_skip(),
 *    and the kernel does not overwrite it before the caller publishes the
 *    tail (events.c) after handling it;
 *  - a parsed sample points into its record (the stack bytes): it lives
 *    as long as the record does.
 */
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwinder.h"

#define PERF_REC_MAX 65535u   /* a record's size is a u16 */
#define PERF_STACK_MAX 65528u /* the kernel's cap on sample_stack_user */
#define PERF_MAX_REGS 32      /* registers a layout may ask for */
/* A sample's tid once its thread is unhashed in its exit (the kernel says -1). */
#define PERF_TID_GONE 0xffffffffu

/* Record types we read (linux/perf_event.h). */
#define PERF_REC_LOST 2
#define PERF_REC_COMM 3
#define PERF_REC_EXIT 4
#define PERF_REC_THROTTLE 5
#define PERF_REC_UNTHROTTLE 6
#define PERF_REC_FORK 7
#define PERF_REC_SAMPLE 9
#define PERF_REC_SWITCH 14

/* The sample fields a layout may hold (linux/perf_event.h's PERF_SAMPLE_*). */
#define PERF_LAYOUT_TID (1u << 1)
#define PERF_LAYOUT_TIME (1u << 2)
#define PERF_LAYOUT_CPU (1u << 7)
#define PERF_LAYOUT_PERIOD (1u << 8)
#define PERF_LAYOUT_CALLCHAIN (1u << 5)
#define PERF_CHAIN_MAX 127 /* kernel frames a sample may carry (the kernel's default limit) */
#define PERF_LAYOUT_REGS_USER (1u << 12)
#define PERF_LAYOUT_STACK_USER (1u << 13)
#define PERF_LAYOUT_RAW (1u << 10)   /* a tracepoint's own fields */
#define PERF_RAW_MAX 4096            /* raw bytes a sample may carry */

/* What a sample record holds: the event's sample_type and sample_regs_user. */
struct perf_layout {
	uint64_t sample_type; /* PERF_LAYOUT_* bits only */
	uint64_t regs_mask;   /* at most PERF_MAX_REGS bits */
};

struct perf_sample {
	uint32_t pid, tid;               /* tid PERF_TID_GONE: the thread is past its exit */
	uint64_t time;
	uint32_t cpu;
	uint64_t period;
	const unsigned char *chain;      /* the call chain's nchain u64 entries, or NULL */
	uint64_t nchain;                 /* at most PERF_CHAIN_MAX */
	const unsigned char *raw;        /* a tracepoint's record, raw_len bytes, or NULL */
	uint32_t raw_len;                /* at most PERF_RAW_MAX */
	uint64_t abi;                    /* 0: no user registers (a kernel thread) */
	uint64_t regs[PERF_MAX_REGS];    /* in mask order, when abi != 0 */
	unsigned nregs;
	const unsigned char *stack;      /* the copy of the user stack, from sp up */
	uint64_t stack_len;              /* its valid bytes (the kernel's dyn_size) */
};

/* A reader over one ring's data area (size a power of two). */
struct perf_ring {
	const unsigned char *data;
	uint64_t size;
	uint64_t tail;           /* our position (the kernel's data_tail once published) */
	unsigned char *scratch;  /* PERF_REC_MAX bytes, for a record that wraps */
	uint64_t corrupt;        /* times the reader found garbage and skipped to the head */
};

/* Whether layout l is one ring_parse_sample() can read. */
int ring_layout_valid(const struct perf_layout *l);

/*
 * The next record between r->tail and head: 1 with *rec (its header
 * first) and *len set and r->tail moved past it; 0 when the ring is
 * empty; -1 when what is there is corrupt (r->tail is then head).
 */
int ring_next(struct perf_ring *r, uint64_t head, const unsigned char **rec, size_t *len);

/*
 * The time a non-sample record carries at its end (events opened with
 * sample_id_all: the layout's TID, TIME and CPU fields follow every
 * record). 0, or -1 when the layout has no time or the record is too short.
 */
int ring_record_time(const struct perf_layout *l, const unsigned char *rec, size_t len,
		     uint64_t *time);

/* The record's type (its header's), or 0 when it is shorter than a header. */
uint32_t ring_record_type(const unsigned char *rec, size_t len);

/* Parse a PERF_REC_SAMPLE of layout l. 0, or -1 when it is malformed. */
int ring_parse_sample(const struct perf_layout *l, const unsigned char *rec, size_t len,
		      struct perf_sample *s);

/* A PERF_REC_LOST record's count. 0 or -1. */
int ring_parse_lost(const unsigned char *rec, size_t len, uint64_t *lost);

/*
 * A PERF_REC_COMM record: the thread and its new name (NUL-terminated in
 * name[16], cut if longer), *exec set when it comes from an exec. 0 or -1.
 */
int ring_parse_comm(const unsigned char *rec, size_t len, uint32_t *pid, uint32_t *tid,
		    char name[16], int *exec);

/* A PERF_REC_SWITCH record (context_switch events, task scope). */
struct perf_switch {
	uint32_t pid, tid;    /* the thread switched (the record's sample_id) */
	uint64_t time;
	int out;              /* switched out; else in */
	int preempt;          /* switched out while runnable (Linux 4.17 and later say so) */
};

/*
 * Parse a PERF_REC_SWITCH of layout l (which must hold TID and TIME: they
 * come in the record's sample_id). 0, or -1 when it is malformed.
 */
int ring_parse_switch(const struct perf_layout *l, const unsigned char *rec, size_t len,
		      struct perf_switch *sw);

/*
 * The registers of a sample with x86_64 perf register mask mask, as the
 * unwinder wants them (DWARF numbering), and its stack as region 0.
 * 0, or -1 when the sample has no user registers or no stack pointer.
 */
int ring_sample_image(const struct perf_sample *s, uint64_t mask, struct thread_image *img);

#endif
