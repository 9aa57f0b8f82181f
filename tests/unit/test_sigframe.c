/*
 * test_sigframe.c — finding the kernel's signal frame in a copy of an
 * alternate signal stack: a frame as the kernel writes it is found and
 * read; a nested frame (interrupted code already on the alternate stack)
 * is skipped for the outer one; inconsistent fields, wrong alignment and
 * copies cut short are "no frame"; random bytes never crash the scan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attach/ptrace/sigframe.h"

#define ALT_LO 0x7f0000100000ull
#define ALT_SIZE 0x10000ull
#define OUTER (ALT_LO + ALT_SIZE - 0x1000 + 8) /* 8 modulo 16, as the kernel puts it */
#define THREAD_SP 0x7f0000800f38ull
#define RESTORER 0x7f0000300040ull

static unsigned char stack[ALT_SIZE];

static void put(uint64_t addr, unsigned word, uint64_t v)
{
	memcpy(stack + (addr - ALT_LO) + 8 * word, &v, sizeof(v));
}

/* A frame at addr that interrupted code at sp, as the kernel writes it. */
static void frame(uint64_t addr, uint64_t sp)
{
	put(addr, 0, RESTORER);
	put(addr, 1, 7);       /* uc_flags */
	put(addr, 2, 0);       /* uc_link */
	put(addr, 3, ALT_LO);  /* ss_sp */
	put(addr, 4, 0);       /* ss_flags */
	put(addr, 5, ALT_SIZE);
	put(addr, 21, sp);
	put(addr, 22, 0x555500001234ull);
	put(addr, 29, addr + 0x200); /* fpstate, above the frame */
}

static void test_found(void **state)
{
	struct sigframe f;
	uint64_t sp = ALT_LO + 0x8000;

	(void)state;
	memset(stack, 0, sizeof(stack));
	frame(OUTER, THREAD_SP);
	assert_int_equal(sigframe_find(stack + (sp - ALT_LO), sp, ALT_LO + ALT_SIZE - sp, &f), 0);
	assert_true(f.addr == OUTER && f.restorer == RESTORER && f.sp == THREAD_SP);
	assert_true(f.alt_lo == ALT_LO && f.alt_hi == ALT_LO + ALT_SIZE && f.pc == 0x555500001234ull);
	assert_int_equal(sigframe_check(stack + (sp - ALT_LO), sp, ALT_LO + ALT_SIZE - sp, OUTER, &f),
			 0);
	/* SS_AUTODISARM is a flag sigaltstack() may have set. */
	put(OUTER, 4, 1u << 31);
	assert_int_equal(sigframe_find(stack + (sp - ALT_LO), sp, ALT_LO + ALT_SIZE - sp, &f), 0);
	put(OUTER, 1, 6); /* no xsave */
	assert_int_equal(sigframe_find(stack + (sp - ALT_LO), sp, ALT_LO + ALT_SIZE - sp, &f), 0);
}

static void test_nested(void **state)
{
	struct sigframe f;
	uint64_t inner = ALT_LO + 0x6008, sp = ALT_LO + 0x5000;

	(void)state;
	memset(stack, 0, sizeof(stack));
	frame(OUTER, THREAD_SP);
	frame(inner, ALT_LO + 0x7000); /* interrupted a handler on the same stack */
	assert_int_equal(sigframe_find(stack + (sp - ALT_LO), sp, ALT_LO + ALT_SIZE - sp, &f), 0);
	assert_true(f.addr == OUTER && f.sp == THREAD_SP);
}

static void test_refused(void **state)
{
	static const struct { unsigned word; uint64_t v; } bad[] = {
		{ 1, 8 },                  /* uc_flags the kernel does not set */
		{ 1, 1 },                  /* ... or without the two it always sets */
		{ 1, 0 },
		{ 2, 1 },                  /* uc_link */
		{ 3, ALT_LO + 0x10000 },   /* the alternate stack does not hold sp */
		{ 4, 1 },                  /* flags other than SS_AUTODISARM */
		{ 5, 100 },                /* smaller than MINSIGSTKSZ */
		{ 5, 1ull << 40 },         /* absurdly large */
		{ 3, UINT64_MAX - 10 },    /* wraps */
		{ 21, ALT_LO + 0x9000 },   /* saved sp on the alternate stack */
		{ 21, 0 },
		{ 22, 0 },                 /* no saved pc */
		{ 0, 0 },                  /* no return address */
		{ 29, OUTER - 0x100 },     /* FPU state below the frame */
	};
	struct sigframe f;
	uint64_t sp = ALT_LO + 0x8000;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(stack, 0, sizeof(stack));
		frame(OUTER, THREAD_SP);
		put(OUTER, bad[i].word, bad[i].v);
		assert_int_equal(sigframe_find(stack + (sp - ALT_LO), sp, ALT_LO + ALT_SIZE - sp, &f),
				 -1);
	}
	memset(stack, 0, sizeof(stack));
	frame(OUTER, THREAD_SP);
	/* Misaligned, or a copy that ends inside the frame. */
	assert_int_equal(sigframe_check(stack + (sp - ALT_LO), sp, ALT_LO + ALT_SIZE - sp, OUTER + 8,
					&f),
			 -1);
	assert_int_equal(sigframe_find(stack + (sp - ALT_LO), sp, OUTER - sp + SIGFRAME_LEN - 1, &f),
			 -1);
	assert_int_equal(sigframe_find(stack + (sp - ALT_LO), sp, OUTER - sp + SIGFRAME_LEN, &f), 0);
	/* The thread's sp below the alternate stack it is said to be on. */
	assert_int_equal(sigframe_check(stack, ALT_LO - 16, sizeof(stack), OUTER, &f), -1);
	assert_int_equal(sigframe_find(stack, 0, 0, &f), -1);
}

static void test_random(void **state)
{
	struct sigframe f;
	unsigned seed = 7, i, round;

	(void)state;
	for (round = 0; round < 200; round++) {
		for (i = 0; i < sizeof(stack); i++) {
			seed = seed * 1103515245u + 12345u;
			stack[i] = (unsigned char)(seed >> 16);
		}
		/* Any base and length: every read stays inside. */
		(void)sigframe_find(stack + round, ALT_LO + round, sizeof(stack) - round, &f);
		(void)sigframe_check(stack, ALT_LO, round * 7, ALT_LO + round * 8 + 8, &f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
