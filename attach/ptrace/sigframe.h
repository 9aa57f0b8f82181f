#ifndef CPROF_SIGFRAME_H
#define CPROF_SIGFRAME_H
/*
 * sigframe — finding, in a copy of an alternate signal stack, the frame
 * the kernel wrote when it entered a handler installed with SA_ONSTACK
 * from the thread's own stack (x86_64 struct rt_sigframe: the handler's
 * return address, then the ucontext with the interrupted registers), so
 * that the tracer can copy the interrupted stack too.
 *
 * Invariants:
 *  - pure functions over a byte buffer: every byte is untrusted and read
 *    within bounds; a buffer too short or a field out of range is "no
 *    frame", never a crash;
 *  - a frame is accepted only when the fields the kernel writes are
 *    consistent: its alignment, uc_flags and uc_link as the kernel sets
 *    them, the saved sigaltstack (uc_stack) holding the current sp and the
 *    whole frame, its flags as sigaltstack() leaves them (0 or
 *    SS_AUTODISARM), the saved sp outside the alternate stack (the
 *    outermost frame: one nested on the same stack is skipped), saved pc
 *    and return address not zero, the FPU state pointer zero or above the
 *    frame within the alternate stack. The return
 *    address being the kernel's rt_sigreturn trampoline is checked apart,
 *    in the target's code (sigframe_restorer(): the one function here that
 *    reads the target).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bytes of a frame read here: return address and ucontext (uc_sigmask included). */
#define SIGFRAME_LEN 312
#define SIGFRAME_MIN_ALT 2048       /* MINSIGSTKSZ: no alternate stack is smaller */
#define SIGFRAME_MAX_ALT (1u << 30) /* nor larger, here */

/* A signal frame as found. */
struct sigframe {
	uint64_t addr;           /* where it is: its return-address word */
	uint64_t restorer;       /* that return address (normally __restore_rt) */
	uint64_t alt_lo, alt_hi; /* the alternate stack [lo, hi), as the kernel saved it */
	uint64_t sp, pc;         /* the interrupted thread's stack pointer and pc */
};

/*
 * Whether buf (len bytes copied from the target's [base, base + len), base
 * being the thread's sp) holds a signal frame at address addr, as above.
 * 0 and *f filled when it does, else -1.
 */
int sigframe_check(const unsigned char *buf, uint64_t base, size_t len, uint64_t addr,
		   struct sigframe *f);

/* The lowest signal frame in buf as above: 0 and *f filled, or -1. */
int sigframe_find(const unsigned char *buf, uint64_t base, size_t len, struct sigframe *f);

/*
 * Whether addr, in process pid, is the kernel's rt_sigreturn trampoline
 * ("mov $15,%rax; syscall"), as a signal frame's return address must be.
 * *known remembers the last address found to be one (start it at 0), so
 * that the check reads the target's code once: 1 or 0.
 */
int sigframe_restorer(pid_t pid, uint64_t *known, uint64_t addr);

/*
 * For a thread whose pc is in the trampoline (at its start, its syscall,
 * or just past it: unwind/unwinder.h), the trampoline's start in *start:
 * then the handler has returned, popping the frame's return-address word,
 * and the frame begins 8 bytes below sp. 0, or -1 when pc is elsewhere.
 */
int sigframe_popped(pid_t pid, uint64_t *known, uint64_t pc, uint64_t *start);

#endif
