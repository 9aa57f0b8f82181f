/*
 * hostile_unwind_cfiloop — a target whose hot functions carry hand-written
 * CFI that never ends, to show that cprof's unwinder bounds its work
 * whatever the CFI says. Each spinning thread sits in one function:
 *  - "cfaloop": DW_CFA_def_cfa_expression { DW_OP_skip -3 }, a jump onto
 *    itself that reads no memory but its own opcodes;
 *  - "raloop": DW_CFA_expression for the return address column (16), the
 *    same loop;
 *  - "derefloop": DW_CFA_expression for the return address, a loop that
 *    reads the stack each time round { dup; deref; drop; skip -6 };
 *  - "deep": a recursion 400 frames deep whose every frame has a CFA
 *    expression that does end, after a long countdown { breg7 16;
 *    const2u N; lit1; minus; dup; bra -6; drop }, each frame within the
 *    per-frame budget but the stack past the per-stack one.
 * Each thread sleeps in its function (a second at a time; "duty" as the
 * argument: spins in bursts, then sleeps 2 ms, a CPU sampler's target).
 * main sleeps in nanosleep, an ordinary complete stack. Prints "ready PID"
 * once every thread runs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void hostile_cfa_loop(void);
void hostile_ra_loop(void);
void hostile_deref_loop(void);
void hostile_deep(int depth);

/*
 * DW_CFA_def_cfa_expression = 0x0f, DW_CFA_expression = 0x10,
 * DW_OP_skip = 0x2f, DW_OP_bra = 0x28, DW_OP_dup = 0x12, DW_OP_drop = 0x13,
 * DW_OP_deref = 0x06, DW_OP_breg7 = 0x77, DW_OP_const2u = 0x0a,
 * DW_OP_lit1 = 0x31, DW_OP_minus = 0x1c. The countdown is 1300 rounds of
 * 6 bytes: 0x0514.
 */
/*
 * Each function's body, under its CFI: spin hostile_spins rounds, then
 * sleep hostile_ts (nanosleep) and again, for ever, so that the thread's
 * pc is always inside the function, whether it is caught running (a CPU
 * sampler) or asleep (a wall or threads capture). rcx, r11 and rax are
 * the syscall's anyway.
 */
#define HOSTILE_BODY                                  \
	"1:	movl hostile_spins(%rip), %ecx\n"   \
	"2:	pause\n"                            \
	"	decl %ecx\n"                        \
	"	jnz 2b\n"                           \
	"	leaq hostile_ts(%rip), %rdi\n"      \
	"	xorl %esi, %esi\n"                  \
	"	movl $35, %eax\n"                   \
	"	syscall\n"                          \
	"	jmp 1b\n"

unsigned hostile_spins = 1;
struct timespec hostile_ts = { 1, 0 };

__asm__(".text\n"
	".globl hostile_cfa_loop\n"
	".type hostile_cfa_loop, @function\n"
	"hostile_cfa_loop:\n"
	"	.cfi_startproc\n"
	"	.cfi_escape 0x0f, 3, 0x2f, 0xfd, 0xff\n"
	HOSTILE_BODY
	"	.cfi_endproc\n"
	".size hostile_cfa_loop, .-hostile_cfa_loop\n"

	".globl hostile_ra_loop\n"
	".type hostile_ra_loop, @function\n"
	"hostile_ra_loop:\n"
	"	.cfi_startproc\n"
	"	.cfi_escape 0x10, 16, 3, 0x2f, 0xfd, 0xff\n"
	HOSTILE_BODY
	"	.cfi_endproc\n"
	".size hostile_ra_loop, .-hostile_ra_loop\n"

	".globl hostile_deref_loop\n"
	".type hostile_deref_loop, @function\n"
	"hostile_deref_loop:\n"
	"	.cfi_startproc\n"
	"	.cfi_escape 0x10, 16, 6, 0x12, 0x06, 0x13, 0x2f, 0xfa, 0xff\n"
	HOSTILE_BODY
	"	.cfi_endproc\n"
	".size hostile_deref_loop, .-hostile_deref_loop\n"

	".globl hostile_deep\n"
	".type hostile_deep, @function\n"
	"hostile_deep:\n"
	"	.cfi_startproc\n"
	"	subq $8, %rsp\n"
	"	.cfi_escape 0x0f, 12, 0x77, 0x10, 0x0a, 0x14, 0x05, 0x31, 0x1c, 0x12, 0x28, 0xfa, 0xff, 0x13\n"
	"	testl %edi, %edi\n"
	"	jz 1f\n"
	"	decl %edi\n"
	"	call hostile_deep\n"
	HOSTILE_BODY
	"	.cfi_endproc\n"
	".size hostile_deep, .-hostile_deep\n");

static void *run(void *arg)
{
	const char *name = arg;

	pthread_setname_np(pthread_self(), name);
	switch (name[0]) {
	case 'c': hostile_cfa_loop(); break;
	case 'r': hostile_ra_loop(); break;
	case 'd':
		if (name[1] == 'e' && name[2] == 'r')
			hostile_deref_loop();
		else
			hostile_deep(400);
		break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "cfaloop", "raloop", "derefloop", "deep" };
	struct timespec ts = { 1, 0 };
	pthread_t t;
	size_t i;

	if (argc > 1 && !strcmp(argv[1], "duty")) {
		/* Running about half the time, in bursts: a CPU sampler's target. */
		hostile_spins = 100000;
		hostile_ts.tv_sec = 0;
		hostile_ts.tv_nsec = 2000000;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (pthread_create(&t, NULL, run, (void *)names[i])) {
			fprintf(stderr, "hostile_unwind_cfiloop: pthread_create failed\n");
			return 1;
		}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		nanosleep(&ts, NULL);
}
