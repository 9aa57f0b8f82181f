/*
 * test_altstack.c — completing a perf sample taken on an alternate signal
 * stack, against this process's own memory (process_vm_readv of getpid()):
 * a copy holding the kernel's frame gets the interrupted stack as a second
 * region, read from the live memory; a live frame whose saved sp changed
 * since the copy (the thread moved on) is refused and counted; a thread
 * sampled at the sigreturn trampoline, the frame's first word popped, is
 * completed from the copy; a copy without a frame, or one whose return
 * address is not the trampoline, is left alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/ptrace/sigframe.h"
#include "attach/perf/altstack.h"

#define ALT_SIZE 0x4000
#define MAIN_SIZE 0x2000
#define FRAME_OFF (ALT_SIZE - 0x800 + 8) /* 8 modulo 16, as the kernel puts it */
#define CAP 0x1000

static unsigned char alt[ALT_SIZE] __attribute__((aligned(16)));
static unsigned char mainstk[MAIN_SIZE] __attribute__((aligned(16)));
/* rt_sigreturn's trampoline: mov $15,%rax; syscall */
static const unsigned char tramp[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
static unsigned char copy[ALT_SIZE];

static uint64_t at(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void put(unsigned word, uint64_t v)
{
	memcpy(alt + FRAME_OFF + 8 * word, &v, sizeof(v));
}

/* The live alternate stack with a frame that interrupted code at sp. */
static void frame(uint64_t sp)
{
	memset(alt, 0, sizeof(alt));
	put(0, at(tramp));
	put(1, 7);
	put(3, at(alt));
	put(5, ALT_SIZE);
	put(21, sp);
	put(22, 0x555500001234ull);
}

/* The kernel's copy from sp (an offset into alt) up, as an image. */
static void sample(struct thread_image *img, size_t off, uint64_t pc)
{
	memcpy(copy, alt + off, ALT_SIZE - off);
	memset(img, 0, sizeof(*img));
	img->regs.r[DWARF_RSP] = at(alt) + off;
	img->regs.r[DWARF_RIP] = pc;
	img->regs.valid = (1u << DWARF_RSP) | (1u << DWARF_RIP);
	img->nstacks = 1;
	img->stack[0].addr = at(alt) + off;
	img->stack[0].len = ALT_SIZE - off;
	img->stack[0].bytes = copy;
}

static void test_completed(void **state)
{
	uint64_t sp = at(mainstk) + 0x100;
	struct thread_image img, out;
	struct altstack a;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(mainstk); i++)
		mainstk[i] = (unsigned char)(i * 7);
	frame(sp);
	sample(&img, 0x200, 0x555500005678ull);
	assert_int_equal(altstack_init(&a, getpid(), CAP), 0);
	assert_int_equal(altstack_complete(&a, &img, &out), 0);
	assert_int_equal(out.nstacks, 2);
	assert_true(out.stack[0].addr == img.stack[0].addr && out.stack[0].bytes == copy);
	assert_int_equal(out.stack[0].len, ALT_SIZE - 0x200); /* to the alternate stack's end */
	assert_true(out.stack[1].addr == sp);
	assert_int_equal(out.stack[1].len, CAP); /* the cap, not the whole stack */
	assert_memory_equal(out.stack[1].bytes, mainstk + 0x100, CAP);
	assert_true(out.regs.r[DWARF_RIP] == 0x555500005678ull);
	assert_int_equal(a.completed, 1);
	assert_int_equal(a.stale, 0);

	/* A later signal found the thread at the same sp: still its stack. */
	put(22, 0x555500009999ull);
	assert_int_equal(altstack_complete(&a, &img, &out), 0);
	/* At another sp: it moved on, the bytes there may be another call's. */
	put(21, sp + 0x40);
	assert_int_equal(altstack_complete(&a, &img, &out), -1);
	assert_int_equal(a.stale, 1);
	altstack_release(&a);
}

static void test_popped(void **state)
{
	uint64_t sp = at(mainstk) + 0x300;
	static const unsigned off[] = { 0, 7, 9 };
	struct thread_image img, out;
	struct altstack a;
	unsigned i;

	(void)state;
	frame(sp);
	assert_int_equal(altstack_init(&a, getpid(), CAP), 0);
	for (i = 0; i < 3; i++) {
		/* Copy from just past the return-address word: the frame starts below it. */
		sample(&img, FRAME_OFF + 8, at(tramp) + off[i]);
		assert_int_equal(altstack_complete(&a, &img, &out), 0);
		assert_true(out.nstacks == 2 && out.stack[1].addr == sp);
	}
	/* Anywhere else in the code, the word below sp is not looked for. */
	sample(&img, FRAME_OFF + 8, at(tramp) + 3);
	assert_int_equal(altstack_complete(&a, &img, &out), -1);
	altstack_release(&a);
}

static void test_refused(void **state)
{
	struct thread_image img, out;
	struct altstack a;

	(void)state;
	assert_int_equal(altstack_init(&a, getpid(), CAP), 0);
	memset(alt, 0, sizeof(alt));
	sample(&img, 0x200, 1);
	assert_int_equal(altstack_complete(&a, &img, &out), -1); /* no frame */
	frame(at(mainstk) + 0x100);
	put(0, at(tramp) + 1); /* its return address is not the trampoline */
	sample(&img, 0x200, 1);
	assert_int_equal(altstack_complete(&a, &img, &out), -1);
	frame(at(mainstk) + 0x100);
	sample(&img, 0x200, 1);
	img.nstacks = 2; /* already completed (ptrace) */
	assert_int_equal(altstack_complete(&a, &img, &out), -1);
	assert_int_equal(a.completed + a.stale, 0);
	altstack_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_completed),
		cmocka_unit_test(test_popped),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
