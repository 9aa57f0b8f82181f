#ifndef CPROF_REMCALL_H
#define CPROF_REMCALL_H
/*
 * remcall — calling a function inside a running process on ONE of its
 * threads, the others left running, so that the target never notices,
 * whatever happens to cprof-attach.
 *
 * The thread is seized and interrupted alone (PTRACE_SEIZE without
 * PTRACE_O_EXITKILL, PTRACE_INTERRUPT). Below its red zone the call
 * writes a complete x86-64 rt_sigframe, exactly as the kernel writes one
 * for a signal handler: the return address is libc's __restore_rt, the
 * ucontext holds the thread's own registers (with the restart of an
 * interrupted system call already applied, as the kernel applies it for a
 * handler with SA_RESTART), its signal mask and its whole xstate. The
 * function then runs as if it were a signal handler, all signals blocked.
 *
 * Invariants:
 *  - at every instant the thread is either untouched, or will come back to
 *    exactly where it was by itself: if cprof-attach dies (SIGKILL at any
 *    instruction) the kernel detaches the thread, the function returns
 *    into __restore_rt and rt_sigreturn restores registers, xstate and
 *    mask from the frame. So registers are set to the call only after the
 *    frame is written, the mask is blocked only after that, and on the way
 *    back the mask and xstate are put back before the registers;
 *  - on the normal path the thread is caught at the entry of that
 *    rt_sigreturn (PTRACE_SYSCALL), given back its registers with the
 *    restart the kernel would have done for a thread without a handler
 *    (ERESTART_RESTARTBLOCK resumes through restart_syscall with its
 *    remaining time), the sigreturn skipped (orig_rax = -1), and detached:
 *    signals that arrived during the call are delivered after it, and no
 *    system call of the thread returns EINTR because of us;
 *  - the whole call is bounded by a deadline; at its expiry the thread is
 *    detached and finishes the call by itself through __restore_rt;
 *  - the return value of the function is lost (rt_sigreturn overwrites
 *    rax): functions called this way publish their result in memory.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define REMCALL_DEADLINE_MS 5000
#define REMCALL_REDZONE 128
#define REMCALL_STACK_NEED (64u << 10) /* stack below the frame a call may use */
#define REMCALL_BLOB_MAX 4096

enum {
	REMCALL_OK = 0,
	REMCALL_UNTOUCHED = -1, /* failed before the thread was changed; it is detached */
	REMCALL_TIMEOUT = -2,   /* the deadline came: detached, it finishes the call by itself */
	REMCALL_GONE = -3,      /* the thread or the process went away */
	REMCALL_VETOED = -4,    /* req->vet refused the thread as stopped; it is detached untouched */
};

struct user_regs_struct;

/*
 * Asked with the stopped thread's registers before anything changes:
 * 0 to go on, or -1 with why (cap bytes) to leave it untouched (a thread
 * stopped inside the allocator must not be made to call dlopen).
 */
typedef int remcall_vet_fn(void *ctx, pid_t pid, pid_t tid, const struct user_regs_struct *regs,
			   char *why, size_t cap);

struct remcall_req {
	uint64_t fn;            /* the function's address in the target */
	uint64_t args[6];       /* rdi, rsi, rdx, rcx, r8, r9 */
	const void *blob;       /* bytes copied onto the target's stack above the frame, or NULL */
	size_t blob_len;        /* at most REMCALL_BLOB_MAX */
	int blob_arg;           /* the index of the argument that gets the blob's address, or -1 */
	uint64_t deadline_ms;   /* 0: REMCALL_DEADLINE_MS */
	uint64_t restorer;      /* __restore_rt in the target (remcall_find_restorer()) */
	remcall_vet_fn *vet;    /* or NULL */
	void *vet_ctx;
};

struct remcall_res {
	uint64_t stop_ns;       /* from the interrupt to the detach: how long the thread was held */
	uint32_t syscalls;      /* system-call stops passed during the call */
	int signals;            /* signals passed on during the call */
	int stop_signal;        /* SIGINT/SIGTERM/SIGHUP seen (it waited for the call's end) */
	char why[200];          /* the cause, when not REMCALL_OK */
};

/*
 * The address of __restore_rt ("mov $15,%rax; syscall") in process pid's
 * C library, found in its executable mapping. 0, or -1 with *why.
 */
int remcall_find_restorer(pid_t pid, uint64_t *addr, const char **why);

/*
 * Call req->fn on thread tid of process pid, as above. REMCALL_* and
 * res filled.
 */
int remcall_call(pid_t pid, pid_t tid, const struct remcall_req *req, struct remcall_res *res);

#endif
