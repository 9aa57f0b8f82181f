#ifndef CPROF_RECORD_INT_H
#define CPROF_RECORD_INT_H
/*
 * record_int — the recorder's state, shared by record.c (unwind,
 * symbolize, intern a sample) and lines.c (the source-lines pass after
 * the capture). Nothing else includes it: record.h is the interface.
 *
 * Invariants: those of record.h; locs maps every address recorded to its
 * location id, map_ids every space object's index to its mapping id.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/source/record.h"
#include "common/u64map.h"
#include "unwind/perfmap.h"
#include "unwind/unwinder.h"

struct space;

struct recorder {
	struct profile *prof;
	struct space *space;
	struct unwinder *unw;
	size_t max_depth;
	uint64_t *pcs;
	uint8_t *sig;
	uint64_t *ids;
	uint64_t *map_ids;  /* by space object index; 0 = not added yet */
	size_t nmap_ids;
	struct u64map locs;   /* address -> location id */
	struct u64map last;   /* key -> struct last_stack * */
	struct record_stats stats;
	unsigned last_flags; /* UNWIND_* of the last recorder_add() */
	size_t last_n;       /* ... and its stack's length in ids */
	pid_t pid;
	struct perfmap jit;   /* the target's /tmp/perf-PID.map */
	int jit_state;        /* 0 not read, 1 read, -1 none */
	uint64_t jit_read_ns; /* when it was last read */
	/* recorder_add_refill(), tried in the order added: */
	struct recorder_refill {
		unsigned when; /* RECORDER_REFILL_* */
		recorder_refill_fn *fn;
		void *ctx;
	} refills[RECORDER_REFILLS];
	unsigned nrefills;
	struct thread_image img2; /* what a refill built */
	uint64_t *pcs2;           /* its walk, until it is kept */
	uint8_t *sig2;
	uint64_t kernel_map;      /* the "[kernel.kallsyms]" mapping's id, 0 until needed */
	uint64_t kids[RECORD_KERNEL_MAX]; /* recorder_kernel(): the next add's kernel frames */
	unsigned nkids;
};

#endif
