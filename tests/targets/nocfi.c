/*
 * nocfi — a test target whose hot code cannot be unwound, so that a
 * profiler has to say so instead of guessing. "asmspin" spins in
 * nocfi_spin(), written in assembly with no CFI at all (no FDE covers it);
 * "jitspin" spins in a few bytes of code copied into an anonymous
 * executable mapping, as JIT compilers do (no object covers it), which
 * first pushes a zero and clears rbp, so that neither a frameless leaf's
 * return address nor a frame record leads out of it (t_jit tests the
 * JIT code that can be followed); main
 * sleeps in nanosleep, an ordinary complete stack. Prints "ready" once
 * both threads run.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

void nocfi_spin(void);

/* Top-level assembly: the compiler emits no unwind info for it. */
__asm__(".text\n"
	".globl nocfi_spin\n"
	".type nocfi_spin, @function\n"
	"nocfi_spin:\n"
	"1:	pause\n"
	"	jmp 1b\n"
	".size nocfi_spin, .-nocfi_spin\n");

static void *asm_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "asmspin");
	nocfi_spin();
	return NULL;
}

static void *jit_main(void *arg)
{
	pthread_setname_np(pthread_self(), "jitspin");
	((void (*)(void))arg)();
	return NULL;
}

int main(void)
{
	/* push $0; xor %ebp,%ebp; 1: pause; jmp 1b */
	static const unsigned char code[] = { 0x6a, 0x00, 0x31, 0xed, 0xf3, 0x90, 0xeb, 0xfc };
	struct timespec ts = { 1, 0 };
	pthread_t a, j;
	void *p;

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("nocfi: mmap");
		return 1;
	}
	memcpy(p, code, sizeof(code));
	if (pthread_create(&a, NULL, asm_main, NULL) || pthread_create(&j, NULL, jit_main, p)) {
		fprintf(stderr, "nocfi: pthread_create failed\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		nanosleep(&ts, NULL);
}
