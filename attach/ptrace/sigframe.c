/*
 * sigframe.c — the x86_64 rt_sigframe, word by word from its start (the
 * kernel's arch/x86/include/asm/sigframe.h and uapi sigcontext.h):
 * 0 pretcode (the return address), 1 uc_flags, 2 uc_link, 3 ss_sp,
 * 4 ss_flags, 5 ss_size, 6..13 r8..r15, 14 rdi, 15 rsi, 16 rbp, 17 rbx,
 * 18 rdx, 19 rax, 20 rcx, 21 rsp, 22 rip, 23 eflags, 24 cs/gs/fs/ss,
 * 25 err, 26 trapno, 27 oldmask, 28 cr2, 29 fpstate, 30..37 reserved,
 * 38 uc_sigmask. The kernel places it so that its address is 8 modulo 16
 * (as at any function's entry) and the FPU state above it.
 */
#include <string.h>

#include "attach/ptrace/sigframe.h"
#include "common/vmread.h"
#include "unwind/unwinder.h"

#define W_RESTORER 0
#define W_UC_FLAGS 1
#define W_UC_LINK 2
#define W_SS_SP 3
#define W_SS_FLAGS 4
#define W_SS_SIZE 5
#define W_RSP 21
#define W_RIP 22
#define W_FPSTATE 29

/*
 * uc_flags: UC_FP_XSTATE (1) when the FPU state is in xsave form;
 * UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS (6) always, on x86_64 since
 * Linux 4.6. So 6 or 7, which also makes zeroed stack fail at once.
 */
#define UC_ALWAYS 6ull
#define SS_AUTODISARM_FLAG (1u << 31) /* the only ss_flags bit besides "on it" / "disabled" */

static uint64_t word(const unsigned char *p, unsigned i)
{
	uint64_t v;

	memcpy(&v, p + 8 * i, sizeof(v));
	return v;
}

int sigframe_check(const unsigned char *buf, uint64_t base, size_t len, uint64_t addr,
		   struct sigframe *f)
{
	const unsigned char *p;
	uint64_t lo, size, hi, rsp, fp;

	if (addr < base || addr - base > len || len - (addr - base) < SIGFRAME_LEN || addr % 16 != 8)
		return -1;
	p = buf + (addr - base);
	if ((word(p, W_UC_FLAGS) & ~1ull) != UC_ALWAYS || word(p, W_UC_LINK))
		return -1;
	lo = word(p, W_SS_SP);
	size = word(p, W_SS_SIZE);
	if (size < SIGFRAME_MIN_ALT || size > SIGFRAME_MAX_ALT || lo + size < lo)
		return -1;
	hi = lo + size;
	/* The kernel saves the flags sigaltstack() set, not "on it". */
	if ((uint32_t)word(p, W_SS_FLAGS) & ~SS_AUTODISARM_FLAG)
		return -1;
	if (base < lo || addr > hi || hi - addr < SIGFRAME_LEN)
		return -1;
	/* The outermost frame: entered from code not on the alternate stack. */
	rsp = word(p, W_RSP);
	if (!rsp || (rsp >= lo && rsp < hi) || !word(p, W_RIP) || !word(p, W_RESTORER))
		return -1;
	fp = word(p, W_FPSTATE);
	if (fp && (fp < addr + SIGFRAME_LEN || fp >= hi))
		return -1;
	f->addr = addr;
	f->restorer = word(p, W_RESTORER);
	f->alt_lo = lo;
	f->alt_hi = hi;
	f->sp = rsp;
	f->pc = word(p, W_RIP);
	return 0;
}

int sigframe_find(const unsigned char *buf, uint64_t base, size_t len, struct sigframe *f)
{
	uint64_t a = base + ((24 - base % 16) % 16); /* first address 8 modulo 16 */
	const unsigned char *p, *last;

	if (a < base || a - base > len || len - (a - base) < SIGFRAME_LEN)
		return -1;
	/*
	 * The first copy of every thread is scanned, so the loop is lean: a
	 * candidate goes on only when uc_flags and uc_link are what the kernel
	 * writes and the saved alternate stack holds sp (zeroed or random
	 * stack fails one of them), before sigframe_check() looks at the rest.
	 */
	last = buf + len - SIGFRAME_LEN;
	for (p = buf + (a - base); p <= last; p += 16) {
		if (((word(p, W_UC_FLAGS) & ~1ull) ^ UC_ALWAYS) | word(p, W_UC_LINK))
			continue;
		if (word(p, W_SS_SP) > base || base - word(p, W_SS_SP) >= word(p, W_SS_SIZE))
			continue;
		if (sigframe_check(buf, base, len, base + (uint64_t)(p - buf), f) == 0)
			return 0;
	}
	return -1;
}

int sigframe_restorer(pid_t pid, uint64_t *known, uint64_t addr)
{
	unsigned char b[SIGRETURN_LEN];

	if (addr && addr == *known)
		return 1;
	if (vm_read(pid, addr, b, sizeof(b)) < 0 || memcmp(b, unwind_sigreturn_code, sizeof(b)))
		return 0;
	*known = addr;
	return 1;
}

int sigframe_popped(pid_t pid, uint64_t *known, uint64_t pc, uint64_t *start)
{
	static const unsigned back[] = { 0, SIGRETURN_AT_SYSCALL, SIGRETURN_LEN };
	unsigned i;

	for (i = 0; i < sizeof(back) / sizeof(back[0]); i++)
		if (pc >= back[i] && sigframe_restorer(pid, known, pc - back[i])) {
			*start = pc - back[i];
			return 0;
		}
	return -1;
}
