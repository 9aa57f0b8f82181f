/*
 * stackcopy.c — copying a thread's registers and stack out of the target,
 * once the thread stands still (stopped, or asleep in a syscall). The
 * common case — sp within the cap below the thread's learnt stack end — is
 * one hint lookup and one process_vm_readv.
 *
 * A thread whose sp is not on its own stack as learnt (a thread never seen,
 * or a signal handler on an alternate stack) has its copy searched for the
 * signal frame the kernel wrote at the top of an alternate stack; when one
 * is found, the stack it interrupted is copied too, from the saved sp up,
 * so that unwinding crosses from the handler into the interrupted frames.
 */
#include <string.h>
#include <sys/syscall.h>
#include <sys/user.h>

#include "attach/ptrace/sigframe.h"
#include "attach/ptrace/stackcopy.h"
#include "common/vmread.h"

void stackcopy_regs(struct regs *r, const struct user_regs_struct *u)
{
	r->r[0] = u->rax;
	r->r[1] = u->rdx;
	r->r[2] = u->rcx;
	r->r[3] = u->rbx;
	r->r[4] = u->rsi;
	r->r[5] = u->rdi;
	r->r[6] = u->rbp;
	r->r[7] = u->rsp;
	r->r[8] = u->r8;
	r->r[9] = u->r9;
	r->r[10] = u->r10;
	r->r[11] = u->r11;
	r->r[12] = u->r12;
	r->r[13] = u->r13;
	r->r[14] = u->r14;
	r->r[15] = u->r15;
	r->r[16] = u->rip;
	r->valid = (1u << DWARF_NREGS) - 1;
}

/* Bytes to copy from sp up; *known: sp is within reach of the thread's learnt stack end. */
static size_t copy_size(struct session *s, pid_t tid, uint64_t sp, int *known)
{
	size_t n;

	*known = 0;
	n = s->hints ? hints_get(s->hints, tid, sp, known) : s->stack_cap;
	return n < s->stack_cap ? n : s->stack_cap;
}

/*
 * Copy a thread's stack into snap, from sp up: region 0. When sp is not
 * within reach of the thread's learnt stack end, look for a handler's
 * signal frame on an alternate stack in the copy (first where it was last
 * time, at the top of the alternate stack last found, then anywhere), and
 * when there is one, end region 0 at the alternate stack's end and copy
 * the interrupted stack from its saved sp as region 1, with what is left
 * of the cap: the two regions together never exceed it.
 */
/*
 * A thread stopped at the trampoline itself (its handler has returned, the
 * kernel's sigreturn is next) has popped the frame's return-address word:
 * the frame starts 8 bytes below sp, outside the copy. Read it apart. 0
 * and *f filled, or -1.
 */
static int popped_frame(struct session *s, const struct snapshot *snap, uint64_t sp, uint64_t pc,
			struct sigframe *f)
{
	unsigned char b[SIGFRAME_LEN];
	uint64_t start;

	/*
	 * A thread asleep in a system call has its pc just past that call's
	 * syscall instruction: inside the trampoline only when the call is
	 * rt_sigreturn (which never sleeps). Not reading the target's code
	 * three times for each sleeping thread saved 600 of a 200-thread
	 * snapshot's 805 process_vm_readv calls.
	 */
	if (snap->how == SNAP_SYSCALL && snap->syscall >= 0 && snap->syscall != SYS_rt_sigreturn)
		return -1;
	if (sp < 8 || sigframe_popped(s->pid, &s->restorer, pc, &start) < 0 ||
	    vm_read(s->pid, sp - 8, b, sizeof(b)) < 0)
		return -1;
	return sigframe_check(b, sp - 8, sizeof(b), sp - 8, f);
}

void stackcopy_image(struct session *s, pid_t tid, uint64_t sp, uint64_t pc,
		    struct snapshot *snap)
{
	struct thread_image *img = &snap->img;
	uint64_t frame = 0, end = 0;
	struct sigframe f;
	size_t n, len, n1;
	int known, found;

	n = copy_size(s, tid, sp, &known);
	if (!known && s->hints) {
		hints_alt_get(s->hints, tid, &frame, &end);
		if (end > sp && end - sp <= s->stack_cap && frame >= sp && frame < end)
			n = (size_t)(end - sp); /* its alternate stack, as last found */
		else
			frame = 0;
	}
	len = vm_read_upto(s->pid, sp, snap->stack, n);
	img->nstacks = 1;
	img->stack[0].addr = sp;
	img->stack[0].len = len;
	img->stack[0].bytes = snap->stack;
	if (known)
		return;
	found = (frame && sigframe_check(snap->stack, sp, len, frame, &f) == 0) ||
		sigframe_find(snap->stack, sp, len, &f) == 0 || popped_frame(s, snap, sp, pc, &f) == 0;
	if (!found || !sigframe_restorer(s->pid, &s->restorer, f.restorer)) {
		if (frame)
			hints_alt_set(s->hints, tid, 0, 0); /* not there any more */
		return;
	}
	if (s->hints)
		hints_alt_set(s->hints, tid, f.addr, f.alt_hi);
	if (f.alt_hi - sp < len)
		img->stack[0].len = len = (size_t)(f.alt_hi - sp);
	n1 = copy_size(s, tid, f.sp, &known);
	if (n1 > s->stack_cap - len)
		n1 = s->stack_cap - len;
	if (f.sp < f.alt_lo && f.alt_lo - f.sp < n1)
		n1 = (size_t)(f.alt_lo - f.sp); /* up to the alternate stack, not into it */
	img->stack[1].addr = f.sp;
	img->stack[1].bytes = snap->stack + len;
	img->stack[1].len = vm_read_upto(s->pid, f.sp, snap->stack + len, n1);
	img->nstacks = 2;
	s->stats.altstack_copies++;
}
