/*
 * asmsym — a test target whose hot loop is a hand-written assembly
 * function declared the way x86inc declares its SIMD kernels (x264,
 * dav1d, ffmpeg): a global label with no .type and no .size, so the
 * symbol table calls it NOTYPE of size 0. Linked after crtstuff's
 * frame_dummy (a local function of size 0), whose name a reader that
 * stretches size-0 symbols to their section's end would give it.
 *
 * Usage: asmsym   (spins until killed)
 */
#include <stdio.h>
#include <unistd.h>

__asm__(".text\n"
	".p2align 4\n"
	".globl asm_spin\n"
	"asm_spin:\n"
	"\tmov %rdi, %rax\n"
	"1:\tdec %rax\n"
	"\tjnz 1b\n"
	"\tret\n");

void asm_spin(long n);

void c_caller(void);

__attribute__((noinline)) void c_caller(void)
{
	for (;;)
		asm_spin(100000000);
}

int main(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	c_caller();
	return 0;
}
