#ifndef CPROF_INJECT_H
#define CPROF_INJECT_H
/*
 * inject — loading libcprof.so into a running process that was not
 * started with it, arming and disarming it (--inject, --eject; issue 30,
 * /work/notes/inject-contract.md). Invariants:
 *  - nothing is called in the target before every refusal was checked:
 *    already traced, a seccomp filter, no C library (static), musl, a Go
 *    program, glibc without an exported dlopen (older than 2.34), a mount
 *    namespace that does not see our libcprof.so as the same file;
 *  - every call goes through remcall.h on one thread chosen by pick.h,
 *    retried every PICK_RETRY_MS until the deadline;
 *  - libcprof.so is dlopen'd at most once: a shim already mapped is only
 *    armed; a preloaded one is never touched;
 *  - the results of arm and disarm come from the shim's exported
 *    cprof_inject_result, trusted only when cprof_inject_calls moved.
 */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define INJECT_HEAP 1u  /* CPROF_INJECT_HEAP: the allocation family */
#define INJECT_LOCKS 2u /* CPROF_INJECT_LOCKS: the lock and wait family */

struct inject {
	pid_t pid;
	char shim[PATH_MAX];      /* our libcprof.so, as we and the target see it */
	char mapped[PATH_MAX];    /* the libcprof.so the target maps, "" when none */
	uint64_t shim_base;
	uint64_t restorer;        /* __restore_rt */
	uint64_t dlopen;          /* libc's dlopen */
	uint64_t deadline_ms;     /* for each call, thread choice included */
	int preloaded;            /* libcprof.so was mapped before us and not armable */
	int loaded;               /* we dlopen'd it */
	int armed;                /* we armed it (to disarm at the end) */
	int fresh;                /* armed by this capture: its window starts from nothing */
	uint32_t ncalls;          /* remote calls made */
	uint64_t stop_ns_max, stop_ns_sum;
	uint32_t syscalls;        /* system-call stops the calls passed (each stops the thread twice) */
};

/*
 * The checks above for process pid, and the addresses the calls need. 0,
 * or an exit code (exitcode.h) after one line on stderr naming the cause.
 */
int inject_prepare(struct inject *in, pid_t pid, const char *shim, uint64_t deadline_ms);

/* libcprof.so mapped in the target (dlopen'd unless it was). 0, or an exit code (message printed). */
int inject_load(struct inject *in);

/*
 * cprof_inject_arm(flags, rate, block_rate, mutex_fraction). 0, or an exit
 * code (message printed, with the shim's cprof_inject_why).
 */
int inject_arm(struct inject *in, uint64_t flags, uint64_t rate, uint64_t block_rate,
	       uint64_t mutex_fraction);

/* cprof_inject_disarm(). 0, or an exit code (message printed). */
int inject_disarm(struct inject *in);

#endif
