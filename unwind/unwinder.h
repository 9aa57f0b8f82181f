#ifndef CPROF_UNWINDER_H
#define CPROF_UNWINDER_H
/*
 * unwinder — from a copied thread state (registers and stack bytes) to a
 * call stack, with libunwind's remote API and DWARF CFI (.eh_frame, or
 * .debug_frame for Go), so that code built without frame pointers unwinds.
 *
 * Invariants:
 *  - the unwinder never touches the live target: stack words come from the
 *    copied bytes, everything else from the objects' files (struct space);
 *    an address outside both ends the walk cleanly;
 *  - a thread image holds at most IMAGE_MAX_REGIONS copied stack regions:
 *    region 0 starts at sp; region 1, when present, is the stack a signal
 *    handler running on an alternate signal stack (sigaltstack) interrupted,
 *    from the interrupted sp up. A read is served by the first region that
 *    holds all of its bytes, so overlapping regions are harmless;
 *  - the walk is bounded by the caller's maximum depth and always ends;
 *    its work is bounded whatever the CFI says: a budget of libunwind
 *    accessor calls per frame and per stack, and of steps per stack (the
 *    repairs' walks included), ends it partial, UNWIND_CAUSE_BUDGET;
 *  - a stack is complete only when its last frame's CFI ends the chain
 *    (the return address undefined, as clone3, _start and runtime thread
 *    entries mark it) or the return address is zero, or — Go code, whose
 *    CFI marks no end — at one of the Go runtime's stack roots
 *    (runtime.goexit, mstart, rt0_go, mcall, systemstack, morestack); a Go
 *    walk that ends elsewhere is partial, as is every other end:
 *    UNWIND_PARTIAL with the cause of the step that failed, and no frame
 *    is ever guessed (libunwind's frame-pointer heuristic is refused);
 *  - a frame recovered without the registers (see UNWIND_RECOVERED) is
 *    shown only when the whole walk through it is complete; so are the
 *    frames of code outside every object (JIT code) followed through a
 *    frameless leaf's return address or a chain of frame records;
 *  - pcs[0] is the exact interrupted instruction; every other frame is given
 *    as a call site (return address - 1), except a frame interrupted by a
 *    signal, whose address is exact;
 *  - not thread-safe: one thread uses an unwinder.
 */
#include <stddef.h>
#include <stdint.h>

struct space;

/* Registers in DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. */
#define DWARF_NREGS 17
#define DWARF_RBP 6
#define DWARF_RSP 7
#define DWARF_RIP 16

struct regs {
	uint64_t r[DWARF_NREGS];
	uint32_t valid; /* bit i set when r[i] is known */
};

/*
 * The x86_64 Linux signal trampoline every handler returns to,
 * "mov $15,%rax; syscall" (rt_sigreturn): its bytes, and where in it a
 * thread's pc may be: at its start, at the syscall (the mov done), or just
 * past it (a perf sample taken inside the call). The one definition: the
 * unwinder and the alternate-stack code (attach/ptrace/sigframe.c) match
 * these.
 */
#define SIGRETURN_LEN 9
#define SIGRETURN_AT_SYSCALL 7
static const unsigned char unwind_sigreturn_code[SIGRETURN_LEN] = { 0x48, 0xc7, 0xc0, 0x0f, 0,
								    0,    0,    0x0f, 0x05 };

/* Region 0 (sp's stack) and the stack interrupted by a handler on an alternate one. */
#define IMAGE_MAX_REGIONS 2

/* Copied stack bytes: bytes[0..len) are the target's [addr, addr + len). */
struct stack_region {
	uint64_t addr;
	size_t len;
	const unsigned char *bytes;
};

/* A thread as it was copied: registers and the stack bytes above sp. */
struct thread_image {
	struct regs regs;
	unsigned nstacks;                             /* regions in use, 0..IMAGE_MAX_REGIONS */
	struct stack_region stack[IMAGE_MAX_REGIONS]; /* stack[0].addr is normally rsp */
};

/* Result flags. */
#define UNWIND_TRUNCATED 1u  /* stopped at the caller's depth limit */
#define UNWIND_PARTIAL 2u    /* stopped early; UNWIND_CAUSE(flags) says why */
#define UNWIND_RECOVERED 4u  /* a frame pointer was recovered from the stack */
#define UNWIND_CAUSE_SHIFT 8
#define UNWIND_CAUSE(flags) (((flags) >> UNWIND_CAUSE_SHIFT) & 0xffu)

/* Why a walk stopped before the thread's start. */
enum unwind_cause {
	UNWIND_CAUSE_NONE,          /* it did not */
	UNWIND_CAUSE_NO_REGS,       /* no stack pointer, or libunwind refused the registers */
	UNWIND_CAUSE_NO_OBJECT,     /* a pc outside every mapped object (JIT code, garbage) */
	UNWIND_CAUSE_NO_INFO,       /* an object without CFI for a frame's pc */
	UNWIND_CAUSE_FRAME_POINTER, /* rbp-based CFA in a thread read without a stop, and
				       no frame record on its stack passed every check */
	UNWIND_CAUSE_REGISTER,      /* the CFA needs another register not read */
	UNWIND_CAUSE_STACK_COPY,    /* stack bytes past the copy were needed */
	UNWIND_CAUSE_MEMORY,        /* memory outside the stack and every object */
	UNWIND_CAUSE_BAD_FRAME,     /* a caller below its callee, or a step libunwind refused */
	UNWIND_CAUSE_BUDGET,        /* the walk spent its budget of steps or accessor calls
				       (a looping CFI program or DWARF expression) */
	UNWIND_NCAUSES
};

/* A short lowercase phrase for a cause ("no unwind info"). */
const char *unwind_cause_name(unsigned cause);

struct unwinder;

/*
 * An unwinder reading objects from space (which must outlive it). NULL on
 * failure. An unwinder is a heap object (its layout is private):
 * unwinder_new() and unwinder_free() are a deliberate pair.
 */
struct unwinder *unwinder_new(struct space *space);

/* Free an unwinder from unwinder_new() and all it holds (not its space); NULL is fine. */
void unwinder_free(struct unwinder *u);

/*
 * Unwind img into pcs[0..max), leaf first; returns the number of frames
 * (at least 1 when the image has an instruction pointer, else 0) and sets
 * *flags to UNWIND_* bits and a cause. sig[i] is set to 1 when frame i is
 * a signal trampoline (the kernel's return path from a signal handler,
 * usually __restore_rt), else 0.
 */
size_t unwinder_unwind(struct unwinder *u, const struct thread_image *img, uint64_t *pcs,
		       uint8_t *sig, size_t max, unsigned *flags);

/*
 * How many bytes of copied stack region (from its start) the last walk
 * read, and in *overran whether it wanted bytes just past that region —
 * the copy was too short. The tracer uses this to copy no more than a
 * thread needs. A region the image did not have reads as 0, not overran.
 */
size_t unwinder_stack_used(const struct unwinder *u, unsigned region, int *overran);

#endif
