/*
 * test_perfring.c — the perf ring reader and record parsers (attach/perf/
 * ring.c) on records built here as the kernel writes them: a sample read
 * in place and across the ring's end, lost and comm records, and the
 * registers turned into an unwinder image. Then everything malformed:
 * every truncation of a sample, sizes that run past the record or the
 * ring, a head that runs ahead of the tail by more than the ring, stack
 * sizes that lie; each is refused or skipped, never read past, and random
 * bytes never crash the reader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attach/perf/events.h"
#include "attach/perf/ring.h"

#define RING 4096u
#define SP 0x7ffd00001000ull
#define IP 0x5555000012a0ull

static const struct perf_layout layout = {
	PERF_LAYOUT_TID | PERF_LAYOUT_TIME | PERF_LAYOUT_PERIOD | PERF_LAYOUT_REGS_USER |
		PERF_LAYOUT_STACK_USER,
	PERF_REGS_MASK,
};

static unsigned char scratch[PERF_REC_MAX];

struct rec {
	unsigned char b[1024];
	size_t n;
};

static void put(struct rec *r, const void *p, size_t n)
{
	memcpy(r->b + r->n, p, n);
	r->n += n;
}

static void put64(struct rec *r, uint64_t v)
{
	put(r, &v, sizeof(v));
}

static void header(struct rec *r, uint32_t type, uint16_t misc)
{
	uint16_t size = (uint16_t)r->n;

	memcpy(r->b, &type, 4);
	memcpy(r->b + 4, &misc, 2);
	memcpy(r->b + 6, &size, 2);
}

/* A sample of pid/tid with abi, every register of PERF_REGS_MASK, stack bytes of size, dyn valid. */
static void sample(struct rec *r, uint64_t abi, uint64_t size, uint64_t dyn)
{
	uint32_t ids[2] = { 100, 101 };
	unsigned i;

	r->n = 8;
	put(r, ids, sizeof(ids));
	put64(r, 123456789); /* time */
	put64(r, 10000000);  /* period */
	put64(r, abi);
	if (abi)
		for (i = 0; i < 17; i++)
			/* ax bx cx dx si di bp sp ip, r8..r15 in mask order */
			put64(r, i == 7 ? SP : i == 8 ? IP : 0x1000 + i);
	put64(r, size);
	for (i = 0; i < size; i++)
		r->b[r->n++] = (unsigned char)i;
	if (size)
		put64(r, dyn);
	header(r, PERF_REC_SAMPLE, 2);
}

static void test_sample(void **state)
{
	struct thread_image img;
	struct perf_sample s;
	struct rec r;

	(void)state;
	sample(&r, 2, 64, 48);
	assert_int_equal(ring_parse_sample(&layout, r.b, r.n, &s), 0);
	assert_int_equal(s.pid, 100);
	assert_int_equal(s.tid, 101);
	assert_int_equal(s.time, 123456789);
	assert_int_equal(s.period, 10000000);
	assert_int_equal(s.nregs, 17);
	assert_int_equal(s.stack_len, 48);
	assert_int_equal(ring_sample_image(&s, PERF_REGS_MASK, &img), 0);
	assert_int_equal(img.regs.r[DWARF_RSP], SP);
	assert_int_equal(img.regs.r[DWARF_RIP], IP);
	assert_int_equal(img.regs.r[3], 0x1001);  /* rbx is perf's 1, DWARF's 3 */
	assert_int_equal(img.regs.r[1], 0x1003);  /* rdx is perf's 3, DWARF's 1 */
	assert_int_equal(img.regs.r[15], 0x1010); /* r15 is the last */
	assert_int_equal(img.nstacks, 1);
	assert_int_equal(img.stack[0].addr, SP);
	assert_int_equal(img.stack[0].len, 48);
	assert_int_equal(img.stack[0].bytes[5], 5);
	/* A kernel thread's sample: no registers, no image. */
	sample(&r, 0, 0, 0);
	assert_int_equal(ring_parse_sample(&layout, r.b, r.n, &s), 0);
	assert_int_equal(s.nregs, 0);
	assert_true(s.stack == NULL);
	assert_int_equal(ring_sample_image(&s, PERF_REGS_MASK, &img), -1);
}

/* Switch records (context_switch) and a tracepoint's raw data, as the off-CPU source reads them. */
static void test_switch_and_raw(void **state)
{
	static const struct perf_layout times = { PERF_LAYOUT_TID | PERF_LAYOUT_TIME, 0 };
	static const struct perf_layout tp = { PERF_LAYOUT_TID | PERF_LAYOUT_TIME | PERF_LAYOUT_RAW,
					       0 };
	struct perf_switch sw;
	struct perf_sample s;
	uint32_t raw;
	struct rec r;

	(void)state;
	/* An out record, preempted: no body, its sample_id (tid, time) after the header. */
	r.n = 8;
	put64(&r, 100 | (101ull << 32));
	put64(&r, 555);
	header(&r, PERF_REC_SWITCH, (1u << 13) | (1u << 14));
	assert_int_equal(ring_parse_switch(&times, r.b, r.n, &sw), 0);
	assert_int_equal(sw.pid, 100);
	assert_int_equal(sw.tid, 101);
	assert_int_equal(sw.time, 555);
	assert_true(sw.out && sw.preempt);
	header(&r, PERF_REC_SWITCH, 0); /* in */
	assert_int_equal(ring_parse_switch(&times, r.b, r.n, &sw), 0);
	assert_true(!sw.out && !sw.preempt);
	/* Too short for its sample_id, the wrong type, or a layout without a tid: refused. */
	assert_int_equal(ring_parse_switch(&times, r.b, 12, &sw), -1);
	header(&r, PERF_REC_COMM, 0);
	assert_int_equal(ring_parse_switch(&times, r.b, r.n, &sw), -1);
	header(&r, PERF_REC_SWITCH, 0);
	assert_int_equal(ring_parse_switch(&(struct perf_layout){ PERF_LAYOUT_TIME, 0 }, r.b, r.n,
					   &sw), -1);
	/* A sample with 12 raw bytes. */
	r.n = 8;
	put64(&r, 100 | (101ull << 32));
	put64(&r, 777);
	raw = 12;
	put(&r, &raw, 4);
	put(&r, "abcdefghijkl", 12);
	header(&r, PERF_REC_SAMPLE, 0);
	assert_int_equal(ring_parse_sample(&tp, r.b, r.n, &s), 0);
	assert_int_equal(s.raw_len, 12);
	assert_memory_equal(s.raw, "abcdefghijkl", 12);
	/* Raw bytes said to run past the record, or past PERF_RAW_MAX: refused. */
	raw = 13;
	memcpy(r.b + 24, &raw, 4);
	assert_int_equal(ring_parse_sample(&tp, r.b, r.n, &s), -1);
	raw = PERF_RAW_MAX + 1;
	memcpy(r.b + 24, &raw, 4);
	assert_int_equal(ring_parse_sample(&tp, r.b, r.n, &s), -1);
}

static void test_other_records(void **state)
{
	uint32_t pid, tid;
	uint64_t lost;
	char name[16];
	int exec;
	struct rec r;

	(void)state;
	r.n = 8;
	put64(&r, 7);
	put64(&r, 42);
	header(&r, PERF_REC_LOST, 0);
	assert_int_equal(ring_parse_lost(r.b, r.n, &lost), 0);
	assert_int_equal(lost, 42);
	assert_int_equal(ring_parse_lost(r.b, r.n - 1, &lost), -1);
	r.n = 8;
	put64(&r, 100 | (101ull << 32));
	put(&r, "worker-thread-number-one\0\0\0\0\0\0\0", 32);
	header(&r, PERF_REC_COMM, 1u << 13);
	assert_int_equal(ring_parse_comm(r.b, r.n, &pid, &tid, name, &exec), 0);
	assert_int_equal(pid, 100);
	assert_int_equal(tid, 101);
	assert_string_equal(name, "worker-thread-n"); /* cut at 15 */
	assert_int_equal(exec, 1);
	/* A name that runs to the record's end, without a NUL, stops there. */
	assert_int_equal(ring_parse_comm(r.b, 8 + 8 + 3, &pid, &tid, name, &exec), 0);
	assert_string_equal(name, "wor");
	assert_int_equal(ring_parse_comm(r.b, 12, &pid, &tid, name, &exec), -1);
	assert_int_equal(ring_record_type(r.b, 7), 0);
	/* With sample_id_all, the layout's tid and time follow the record. */
	r.n = 8;
	put64(&r, 100 | (101ull << 32));
	put(&r, "sh\0\0\0\0\0\0", 8);
	put64(&r, 100 | (101ull << 32));
	put64(&r, 987654321);
	header(&r, PERF_REC_COMM, 1u << 13);
	assert_int_equal(ring_parse_comm(r.b, r.n, &pid, &tid, name, &exec), 0);
	assert_string_equal(name, "sh");
	assert_int_equal(ring_record_time(&layout, r.b, r.n, &lost), 0);
	assert_int_equal(lost, 987654321);
	assert_int_equal(ring_record_time(&layout, r.b, 8 + 15, &lost), -1); /* too short */
	{
		struct perf_layout notime = { PERF_LAYOUT_TID, 0 };

		assert_int_equal(ring_record_time(&notime, r.b, r.n, &lost), -1);
	}
}

/* Every prefix of a sample, and each lying size, is refused. */
static void test_truncated(void **state)
{
	struct perf_layout bad = layout;
	struct perf_sample s;
	struct rec r;
	size_t n;
	uint64_t v;

	(void)state;
	sample(&r, 2, 64, 64);
	for (n = 0; n < r.n; n++)
		assert_int_equal(ring_parse_sample(&layout, r.b, n, &s), -1);
	assert_int_equal(ring_parse_sample(&layout, r.b, r.n, &s), 0);
	/* The dynamic size larger than the copy. */
	sample(&r, 2, 64, 65);
	assert_int_equal(ring_parse_sample(&layout, r.b, r.n, &s), -1);
	/* A stack size past the record's end. */
	sample(&r, 2, 64, 64);
	v = 1ull << 40;
	memcpy(r.b + 8 + 8 + 8 + 8 + 8 + 17 * 8, &v, 8);
	assert_int_equal(ring_parse_sample(&layout, r.b, r.n, &s), -1);
	v = 72; /* size plus the dynamic size's own 8 bytes: one word short */
	memcpy(r.b + 8 + 8 + 8 + 8 + 8 + 17 * 8, &v, 8);
	assert_int_equal(ring_parse_sample(&layout, r.b, r.n, &s), -1);
	/* Layouts the parser does not know, or too many registers. */
	bad.sample_type |= 1; /* PERF_SAMPLE_IP */
	assert_int_equal(ring_parse_sample(&bad, r.b, r.n, &s), -1);
	bad = layout;
	bad.regs_mask = ~0ull;
	assert_int_equal(ring_parse_sample(&bad, r.b, r.n, &s), -1);
	/* Not a sample. */
	header(&r, PERF_REC_LOST, 0);
	assert_int_equal(ring_parse_sample(&layout, r.b, r.n, &s), -1);
}

/* Write rec at ring position pos (wrapping). */
static void ring_put(unsigned char *ring, uint64_t pos, const struct rec *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		ring[(pos + i) % RING] = r->b[i];
}

static void test_ring_walk(void **state)
{
	static unsigned char ring[RING];
	struct perf_ring rd = { ring, RING, 0, scratch, 0 };
	const unsigned char *rec;
	struct perf_sample s;
	struct rec a, b;
	uint64_t start = RING - 100, head;
	size_t len;

	(void)state;
	/* A sample that wraps past the end, then a lost record. */
	sample(&a, 2, 200, 200);
	b.n = 8;
	put64(&b, 1);
	put64(&b, 3);
	header(&b, PERF_REC_LOST, 0);
	ring_put(ring, start, &a);
	ring_put(ring, start + a.n, &b);
	head = start + a.n + b.n;
	rd.tail = start;
	assert_int_equal(ring_next(&rd, head, &rec, &len), 1);
	assert_ptr_equal(rec, scratch); /* copied: it wraps */
	assert_int_equal(len, a.n);
	assert_int_equal(ring_parse_sample(&layout, rec, len, &s), 0);
	assert_int_equal(s.stack_len, 200);
	assert_int_equal(s.stack[199], 199);
	assert_int_equal(ring_next(&rd, head, &rec, &len), 1);
	assert_ptr_equal(rec, ring + (start + a.n) % RING); /* in place */
	assert_int_equal(ring_record_type(rec, len), PERF_REC_LOST);
	assert_int_equal(ring_next(&rd, head, &rec, &len), 0);
	assert_int_equal(rd.tail, head);
	assert_int_equal(rd.corrupt, 0);
	/* Without a scratch buffer a wrapping record cannot be handed out. */
	rd.tail = start;
	rd.scratch = NULL;
	assert_int_equal(ring_next(&rd, head, &rec, &len), -1);
	assert_int_equal(rd.tail, head);
}

static void test_ring_corrupt(void **state)
{
	static unsigned char ring[RING];
	struct perf_ring rd = { ring, RING, 0, scratch, 0 };
	const unsigned char *rec;
	struct rec a;
	size_t len;

	(void)state;
	sample(&a, 2, 16, 16);
	ring_put(ring, 0, &a);
	/* Head more than a ring ahead. */
	assert_int_equal(ring_next(&rd, RING + 8, &rec, &len), -1);
	assert_int_equal(rd.tail, RING + 8);
	/* Head behind the tail (wraps to huge). */
	rd.tail = 64;
	assert_int_equal(ring_next(&rd, 0, &rec, &len), -1);
	/* A partial header, a record larger than what is there, a size under a header. */
	rd.tail = 0;
	assert_int_equal(ring_next(&rd, 4, &rec, &len), -1);
	rd.tail = 0;
	assert_int_equal(ring_next(&rd, a.n - 1, &rec, &len), -1);
	memset(ring, 0, 8);
	ring[6] = 4;
	rd.tail = 0;
	assert_int_equal(ring_next(&rd, 64, &rec, &len), -1);
	assert_int_equal(rd.corrupt, 5);
	/* A ring whose size is not a power of two is refused outright. */
	rd.size = RING - 8;
	rd.tail = 0;
	assert_int_equal(ring_next(&rd, 16, &rec, &len), -1);
}

/* Random bytes, random head and tail: every read stays inside the ring. */
static void test_random(void **state)
{
	static unsigned char ring[RING];
	struct perf_ring rd = { ring, RING, 0, scratch, 0 };
	struct thread_image img;
	const unsigned char *rec;
	struct perf_sample s;
	uint32_t seed = 7, pid, tid;
	uint64_t head, lost;
	char name[16];
	int round, i, exec;
	size_t len;

	(void)state;
	for (round = 0; round < 2000; round++) {
		for (i = 0; i < (int)RING; i++) {
			seed = seed * 1103515245u + 12345u;
			ring[i] = (unsigned char)(seed >> 16);
		}
		seed = seed * 1103515245u + 12345u;
		rd.tail = seed % (4 * RING);
		head = rd.tail + (seed >> 8) % (RING + 64);
		while (ring_next(&rd, head, &rec, &len) > 0) {
			if (ring_parse_sample(&layout, rec, len, &s) == 0)
				(void)ring_sample_image(&s, PERF_REGS_MASK, &img);
			(void)ring_parse_lost(rec, len, &lost);
			(void)ring_parse_comm(rec, len, &pid, &tid, name, &exec);
		}
		assert_true(rd.tail == head);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_other_records),
		cmocka_unit_test(test_switch_and_raw),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_ring_walk),
		cmocka_unit_test(test_ring_corrupt),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
