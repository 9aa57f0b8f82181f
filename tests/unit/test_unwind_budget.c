/*
 * test_unwind_budget.c — unit tests for the unwinder's budgets: this test
 * program carries functions whose CFI never ends (a CFA expression that
 * jumps onto itself, reading nothing but its own opcodes; the same for the
 * return address; a loop that reads the stack each round) and one whose
 * CFA expression ends after a countdown too long for a stack of many such
 * frames. Unwinding a copied image whose pc is in each must end, partial,
 * with UNWIND_CAUSE_BUDGET, and an ordinary function's stack must not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/space.h"
#include "unwind/unwinder.h"

void budget_cfa_loop(void);
void budget_ra_loop(void);
void budget_deref_loop(void);
void budget_countdown(void);

/*
 * Never called: only their addresses and CFI are used. The countdown runs
 * 1300 rounds (0x0514) of 6 opcode bytes, within the per-frame budget.
 */
__asm__(".text\n"
	".globl budget_cfa_loop\n"
	".type budget_cfa_loop, @function\n"
	"budget_cfa_loop:\n"
	"	.cfi_startproc\n"
	"	.cfi_escape 0x0f, 3, 0x2f, 0xfd, 0xff\n"
	"	nop\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size budget_cfa_loop, .-budget_cfa_loop\n"
	".globl budget_ra_loop\n"
	".type budget_ra_loop, @function\n"
	"budget_ra_loop:\n"
	"	.cfi_startproc\n"
	"	.cfi_escape 0x10, 16, 3, 0x2f, 0xfd, 0xff\n"
	"	nop\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size budget_ra_loop, .-budget_ra_loop\n"
	".globl budget_deref_loop\n"
	".type budget_deref_loop, @function\n"
	"budget_deref_loop:\n"
	"	.cfi_startproc\n"
	"	.cfi_escape 0x10, 16, 6, 0x12, 0x06, 0x13, 0x2f, 0xfa, 0xff\n"
	"	nop\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size budget_deref_loop, .-budget_deref_loop\n"
	".globl budget_countdown\n"
	".type budget_countdown, @function\n"
	"budget_countdown:\n"
	"	.cfi_startproc\n"
	"	.cfi_escape 0x0f, 12, 0x77, 0x08, 0x0a, 0x14, 0x05, 0x31, 0x1c, 0x12, 0x28, 0xfa, 0xff, 0x13\n"
	"	nop\n"
	"	nop\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size budget_countdown, .-budget_countdown\n");

#define WORDS 8192
#define DEPTH 512

static uint64_t stack_words[WORDS];
static uint64_t pcs[DEPTH];
static uint8_t sig[DEPTH];

/* Unwind an image with pc at fn + 1 over stack_words; the flags. */
static unsigned unwind_at(uint64_t pc, size_t *n)
{
	struct space *s = space_new(getpid());
	struct unwinder *u;
	struct thread_image img;
	unsigned flags = 0;

	assert_non_null(s);
	u = unwinder_new(s);
	assert_non_null(u);
	memset(&img, 0, sizeof(img));
	img.regs.r[DWARF_RIP] = pc;
	img.regs.r[DWARF_RSP] = (uint64_t)(uintptr_t)stack_words;
	img.regs.valid = 1u << DWARF_RIP | 1u << DWARF_RSP;
	img.nstacks = 1;
	img.stack[0].addr = (uint64_t)(uintptr_t)stack_words;
	img.stack[0].len = sizeof(stack_words);
	img.stack[0].bytes = (const unsigned char *)stack_words;
	*n = unwinder_unwind(u, &img, pcs, sig, DEPTH, &flags);
	unwinder_free(u);
	space_free(s);
	return flags;
}

static void expect_budget(void (*fn)(void))
{
	size_t n;
	unsigned flags = unwind_at((uint64_t)(uintptr_t)fn + 1, &n);

	assert_true(flags & UNWIND_PARTIAL);
	assert_int_equal(UNWIND_CAUSE(flags), UNWIND_CAUSE_BUDGET);
	assert_true(n >= 1);
	assert_int_equal(pcs[0], (uint64_t)(uintptr_t)fn + 1);
	assert_string_equal(unwind_cause_name(UNWIND_CAUSE_BUDGET), "unwind budget spent");
}

static void test_cfa_loop(void **state)
{
	(void)state;
	memset(stack_words, 0, sizeof(stack_words));
	expect_budget(budget_cfa_loop);
}

static void test_ra_loop(void **state)
{
	(void)state;
	memset(stack_words, 0, sizeof(stack_words));
	expect_budget(budget_ra_loop);
}

static void test_deref_loop(void **state)
{
	(void)state;
	memset(stack_words, 0, sizeof(stack_words));
	expect_budget(budget_deref_loop);
}

/*
 * A stack of countdown frames: each frame's return address, at its CFA - 8
 * (CFA = sp + 8), is the next countdown frame; each frame alone is within
 * the frame's budget, all of them together not within the stack's.
 */
static void test_countdown_stack(void **state)
{
	size_t i, n;
	unsigned flags;

	(void)state;
	for (i = 0; i < WORDS; i++)
		stack_words[i] = (uint64_t)(uintptr_t)budget_countdown + 2;
	flags = unwind_at((uint64_t)(uintptr_t)budget_countdown + 1, &n);
	assert_true(flags & UNWIND_PARTIAL);
	assert_int_equal(UNWIND_CAUSE(flags), UNWIND_CAUSE_BUDGET);
	assert_true(n > 2 && n < DEPTH); /* several frames before the stack's budget ran out */
	for (i = 1; i < n; i++)
		assert_int_equal(pcs[i], (uint64_t)(uintptr_t)budget_countdown + 1);
}

/* An ordinary function: its CFI is done in a few calls; not partial by budget. */
static void test_ordinary(void **state)
{
	size_t n;
	unsigned flags;

	(void)state;
	memset(stack_words, 0, sizeof(stack_words));
	flags = unwind_at((uint64_t)(uintptr_t)expect_budget + 1, &n);
	assert_int_not_equal(UNWIND_CAUSE(flags), UNWIND_CAUSE_BUDGET);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cfa_loop),
		cmocka_unit_test(test_ra_loop),
		cmocka_unit_test(test_deref_loop),
		cmocka_unit_test(test_countdown_stack),
		cmocka_unit_test(test_ordinary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
