#ifndef CPROF_PTRACE_KSTACK_H
#define CPROF_PTRACE_KSTACK_H
/*
 * kstack — the kernel stack a sleeping thread is blocked in, from
 * /proc/PID/task/TID/stack (root only: the kernel checks CAP_SYS_ADMIN),
 * read without stopping or waking the thread: "futex_wait_queue",
 * "pipe_read", "do_syscall_64"..., innermost first.
 *
 * Invariants:
 *  - the file is the kernel's text, read with one bounded read; a line
 *    that does not parse ends the stack there; at most KSTACK_MAX frames,
 *    names cut at KSTACK_NAME - 1 bytes and made of symbol characters
 *    only (anything else ends the name);
 *  - a thread whose file cannot be read (not root, gone, a kernel without
 *    it) has no kernel stack: n = 0, and errno says why.
 */
#include <sys/types.h>

#define KSTACK_MAX 32
#define KSTACK_NAME 56

struct kstack {
	unsigned n;
	char name[KSTACK_MAX][KSTACK_NAME];
};

/*
 * Fill k with tid's kernel stack, innermost first. 0 (n may be 0: the
 * file was empty), or -1 with errno (EACCES, EPERM: not allowed here).
 */
int kstack_read(pid_t pid, pid_t tid, struct kstack *k);

/* The same from the file's text (len bytes at text), for the tests. */
void kstack_parse(const char *text, size_t len, struct kstack *k);

#endif
