/*
 * jit — a target that generates code at run time, as a JIT does: it maps
 * an anonymous executable page, writes two functions into it (machine
 * code for a counting loop), and writes /tmp/perf-PID.map naming them
 * "jit_hot" and "jit_cold" (the convention of node --perf-basic-prof and
 * other JITs). jit_hot is a frameless leaf; jit_cold keeps a frame record
 * (push rbp; mov rbp, rsp), as JITs do. Neither has CFI. The thread
 * "jitter" calls jit_hot with four times jit_cold's count in a loop, so
 * jit_hot takes ~80% of its time. On SIGTERM or SIGINT the map file is
 * removed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef uint64_t loop_fn(uint64_t n);

/* mov rax, rdi; loop: sub rax, 1; jnz loop; ret */
static const unsigned char leaf_code[] = { 0x48, 0x89, 0xf8, 0x48, 0x83, 0xe8, 0x01, 0x75, 0xfa, 0xc3 };
/* push rbp; mov rbp, rsp; mov rax, rdi; loop: sub rax, 1; jnz loop; pop rbp; ret */
static const unsigned char frame_code[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48,
					    0x83, 0xe8, 0x01, 0x75, 0xfa, 0x5d, 0xc3 };

static char map_path[64];
static loop_fn *hot, *cold;

static void on_stop(int sig)
{
	unlink(map_path);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void *jitter(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "jitter");
	for (;;) {
		hot(400000);
		cold(100000);
	}
	return NULL;
}

int main(void)
{
	unsigned char *code;
	pthread_t t;
	FILE *f;

	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memset(code, 0xcc, 4096);
	memcpy(code + 0x40, leaf_code, sizeof(leaf_code));
	memcpy(code + 0x80, frame_code, sizeof(frame_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) < 0)
		return 1;
	hot = (loop_fn *)(void *)(code + 0x40);
	cold = (loop_fn *)(void *)(code + 0x80);
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(map_path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %x jit_hot\n", (unsigned long)(uintptr_t)(code + 0x40), 0x40);
	fprintf(f, "%lx %x jit_cold\n", (unsigned long)(uintptr_t)(code + 0x80), 0x40);
	fclose(f);
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	pthread_create(&t, NULL, jitter, NULL);
	printf("ready %s\n", map_path);
	fflush(stdout);
	for (;;)
		pause();
}
