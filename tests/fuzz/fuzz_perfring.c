/*
 * fuzz_perfring.c — libFuzzer harness for the perf ring reader and its
 * record parsers (attach/perf/ring.c): the first 8 bytes are the reader's
 * tail, the next 4 how far the kernel's head is ahead of it (anything: a
 * head behind or more than a ring ahead must be refused), the rest the
 * ring's data area, cut to a power of two. Every record handed out is
 * parsed as each type; ASan checks that nothing is read outside the ring
 * or the record, and the parsed sample must lie inside its record. Run by
 * `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attach/perf/events.h"
#include "attach/perf/ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned char scratch[PERF_REC_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct perf_layout layouts[4] = {
		{ PERF_LAYOUT_TID | PERF_LAYOUT_TIME | PERF_LAYOUT_PERIOD | PERF_LAYOUT_REGS_USER |
			  PERF_LAYOUT_STACK_USER,
		  PERF_REGS_MASK },
		/* As root: the kernel's call chain too. */
		{ PERF_LAYOUT_TID | PERF_LAYOUT_TIME | PERF_LAYOUT_PERIOD | PERF_LAYOUT_CALLCHAIN |
			  PERF_LAYOUT_REGS_USER | PERF_LAYOUT_STACK_USER,
		  PERF_REGS_MASK },
		/* Off-CPU: a tracepoint's raw data; the switch records' ring. */
		{ PERF_LAYOUT_TID | PERF_LAYOUT_TIME | PERF_LAYOUT_CALLCHAIN | PERF_LAYOUT_RAW |
			  PERF_LAYOUT_REGS_USER | PERF_LAYOUT_STACK_USER,
		  PERF_REGS_MASK },
		{ PERF_LAYOUT_TID | PERF_LAYOUT_TIME, 0 },
	};
	const struct perf_layout *layout;
	struct perf_ring rd;
	struct perf_sample s;
	struct thread_image img;
	const unsigned char *rec;
	uint64_t tail, head, lost, ring = 8;
	uint32_t ahead, pid, tid;
	char name[16];
	size_t len;
	struct perf_switch sw;
	int exec, n = 0;
	unsigned char *copy;

	if (size < 12 + 8)
		return 0;
	memcpy(&tail, data, 8);
	layout = &layouts[tail >> 62]; /* the tail's top bits: which layout (the ring masks them) */
	memcpy(&ahead, data + 8, 4);
	while (ring * 2 <= size - 12 && ring < (1u << 20))
		ring *= 2;
	/* The ring in its own allocation, so that ASan sees a read past its end. */
	copy = malloc(ring);
	if (!copy)
		return 0;
	memcpy(copy, data + 12, ring);
	memset(&rd, 0, sizeof(rd));
	rd.data = copy;
	rd.size = ring;
	rd.tail = tail;
	rd.scratch = scratch;
	head = tail + ahead;
	while (ring_next(&rd, head, &rec, &len) > 0 && n++ < 100000) {
		if (len < 8 || len > PERF_REC_MAX)
			__builtin_trap();
		if (ring_parse_sample(layout, rec, len, &s) == 0) {
			if (s.nregs > PERF_MAX_REGS || s.nchain > PERF_CHAIN_MAX ||
			    s.raw_len > PERF_RAW_MAX || (s.raw && s.raw + s.raw_len > rec + len))
				__builtin_trap();
			if (s.chain && (s.chain < rec || s.chain + 8 * s.nchain > rec + len))
				__builtin_trap();
			if (s.stack && (s.stack < rec || s.stack + s.stack_len > rec + len))
				__builtin_trap();
			if (ring_sample_image(&s, PERF_REGS_MASK, &img) == 0 && img.nstacks &&
			    img.stack[0].len != s.stack_len)
				__builtin_trap();
		}
		(void)ring_parse_lost(rec, len, &lost);
		(void)ring_record_time(layout, rec, len, &lost);
		if (ring_parse_comm(rec, len, &pid, &tid, name, &exec) == 0 && strlen(name) > 15)
			__builtin_trap();
		if (ring_parse_switch(layout, rec, len, &sw) == 0 && sw.preempt && !sw.out)
			__builtin_trap();
	}
	if (rd.tail != head && n <= 100000)
		__builtin_trap();
	free(copy);
	return 0;
}
