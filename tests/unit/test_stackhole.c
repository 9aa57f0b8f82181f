/*
 * test_stackhole.c — completing a perf sample whose stack copy ended at
 * an untouched page, against this process's own memory (process_vm_readv
 * of getpid()): a short copy gets the bytes above it up to the cap; a
 * copy whose last bytes changed since (the thread moved on) is refused
 * and counted; a copy as long as the cap, one too short to check, one
 * already in two regions, and one that ends where the mapping ends are
 * left alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/perf/stackhole.h"

#define STACK 0x4000
#define CAP 0x3000

static unsigned char stack[STACK] __attribute__((aligned(16)));
static unsigned char copy[STACK];

/* The kernel's copy of len bytes from stack + off, as an image. */
static void sample(struct thread_image *img, unsigned char *base, size_t off, size_t len)
{
	memset(img, 0, sizeof(*img));
	memcpy(copy, base + off, len);
	img->nstacks = 1;
	img->stack[0].addr = (uint64_t)(uintptr_t)(base + off);
	img->stack[0].len = len;
	img->stack[0].bytes = copy;
}

static void fill(void)
{
	size_t i;

	for (i = 0; i < STACK; i++)
		stack[i] = (unsigned char)(i * 7 + 3);
}

static void test_completed(void **state)
{
	struct thread_image img, out;
	struct stackhole h;

	(void)state;
	fill();
	assert_int_equal(stackhole_init(&h, getpid(), CAP), 0);
	sample(&img, stack, 0x100, 0x400);
	assert_int_equal(stackhole_complete(&h, &img, &out), 0);
	assert_int_equal(out.nstacks, 1);
	assert_int_equal(out.stack[0].addr, img.stack[0].addr);
	assert_int_equal(out.stack[0].len, CAP);
	/* The copy's own bytes, then memory's. */
	assert_memory_equal(out.stack[0].bytes, copy, 0x400);
	assert_memory_equal(out.stack[0].bytes + 0x400, stack + 0x500, CAP - 0x400);
	assert_int_equal(h.completed, 1);
	assert_int_equal(h.stale, 0);
	stackhole_release(&h);
}

static void test_moved_on(void **state)
{
	struct thread_image img, out;
	struct stackhole h;

	(void)state;
	fill();
	assert_int_equal(stackhole_init(&h, getpid(), CAP), 0);
	sample(&img, stack, 0x100, 0x400);
	stack[0x100 + 0x400 - 1] ^= 0xff; /* the copy's last byte, rewritten since */
	assert_int_equal(stackhole_complete(&h, &img, &out), -1);
	assert_int_equal(h.stale, 1);
	/* Bytes below the edge may change: they are the copy's, taken as they were. */
	fill();
	stack[0x100] ^= 0xff;
	assert_int_equal(stackhole_complete(&h, &img, &out), 0);
	assert_int_equal(h.completed, 1);
	stackhole_release(&h);
}

static void test_left_alone(void **state)
{
	struct thread_image img, out;
	struct stackhole h;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *m;

	(void)state;
	fill();
	assert_int_equal(stackhole_init(&h, getpid(), CAP), 0);
	sample(&img, stack, 0, CAP); /* as long as the cap */
	assert_int_equal(stackhole_complete(&h, &img, &out), -1);
	sample(&img, stack, 0, STACKHOLE_EDGE - 8); /* too short to check */
	assert_int_equal(stackhole_complete(&h, &img, &out), -1);
	sample(&img, stack, 0, 0x400);
	img.nstacks = 2;
	assert_int_equal(stackhole_complete(&h, &img, &out), -1);
	/* A copy that ends where the mapping ends: nothing above it. */
	m = mmap(NULL, (size_t)(2 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(munmap(m + page, (size_t)page), 0);
	memset(m, 1, (size_t)page);
	sample(&img, m, (size_t)page - 0x200, 0x200);
	assert_int_equal(stackhole_complete(&h, &img, &out), -1);
	assert_int_equal(h.completed + h.stale, 0);
	munmap(m, (size_t)page);
	stackhole_release(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_completed),
		cmocka_unit_test(test_moved_on),
		cmocka_unit_test(test_left_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
