/*
 * unwinder.c — one stack walk over a copied thread with libunwind's
 * remote API (the accessors are in access.c): stepping, telling why a step
 * failed, crossing signal frames and Go's stack roots, and the repairs
 * when a walk stops early (frame-pointer recovery, a PLT stub's leaf, a
 * JIT's frameless leaf or frame-record chain).
 */
#include <stdlib.h>
#include <string.h>

#include <libunwind.h>

#include "unwind/callsite.h"
#include "unwind/space.h"
#include "unwind/unwinder.h"
#include "unwind/unwinder_int.h"

/*
 * Frame-pointer recovery: how far above the frame's sp a frame record is
 * looked for, and how many candidates are tried with a whole walk each.
 */
#define FP_SCAN_MAX (64u << 10)
#define FP_TRIES 8


/* One walk's outcome. */
struct walk {
	size_t n;
	unsigned flags, cause;
	uint64_t fp_sp, fp_pc; /* UNWIND_CAUSE_FRAME_POINTER: the frame's sp and pc */
};

struct unwinder *unwinder_new(struct space *space)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->space = space;
	u->as = unw_create_addr_space(&unwind_accessors, 0);
	if (!u->as) {
		free(u);
		return NULL;
	}
	/* Only one thread unwinds: a per-thread cache needs no lock, and
	 * libunwind brackets every global-cache lock with two sigprocmask
	 * calls, many system calls per stack. Debian's libunwind 1.6 is
	 * built without per-thread caches and takes this as UNW_CACHE_GLOBAL,
	 * locks included; UNW_CACHE_NONE would avoid them but costs a
	 * snapshot more CPU than the locks do. */
	unw_set_caching_policy(u->as, UNW_CACHE_PER_THREAD);
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	unw_destroy_addr_space(u->as);
	free(u->pcs2);
	free(u->sig2);
	free(u);
}

/*
 * Whether ip is the signal trampoline (unwinder.h). libunwind 1.6 only
 * knows after stepping; matching the code bytes, read from the object's
 * file, is cheap and exact.
 */
static int is_sigreturn(struct unwinder *u, unw_word_t ip)
{
	unsigned char b[SIGRETURN_LEN];

	return space_read(u->space, ip, b, sizeof(b)) == 0 &&
	       !memcmp(b, unwind_sigreturn_code, sizeof(b));
}

/*
 * Where a stack begins although the CFI does not end it. Go's linker does
 * not mark its outermost functions' return address undefined, so the walk
 * would read on past them (a zero word there ends it, but nothing
 * guarantees one). Go's own tracebacks end at these: goexit under every
 * goroutine, mstart under a thread's g0 stack, rt0_go under the first
 * thread's (TOPFRAME functions); mcall, systemstack and morestack, which
 * switch a thread onto its g0 stack, are where that stack starts (the
 * goroutine's frames, on another stack, are not followed). Names with and
 * without Go's ".abi0" suffix; checked only in Go binaries whose
 * .debug_frame is in use (a C program's .debug_frame ends its stacks by
 * CFI, as .eh_frame does).
 */
static const char *const thread_roots[] = {
	"runtime.goexit", "runtime.mstart",	 "runtime.rt0_go",
	"runtime.mcall",  "runtime.systemstack", "runtime.morestack",
};

enum { GO_NONE, GO_ROOT, GO_OTHER };

/*
 * Whether pc is Go code (an object with Go's .debug_frame): GO_ROOT in one
 * of thread_roots, else GO_OTHER; GO_NONE for other code. A Go walk that
 * ends anywhere but at a root read a zero or garbage word where a stack
 * switch (a signal handler on the gsignal stack, a vDSO call on g0) left
 * no caller: it is partial.
 */
static int go_frame(struct unwinder *u, uint64_t pc)
{
	struct space_obj *o = space_find(u->space, pc);
	const char *name;
	size_t i, n;

	if (!o || o->go_cfi <= 0)
		return GO_NONE;
	if (!(name = space_symbol(u->space, o, pc, NULL)))
		return GO_OTHER;
	for (i = 0; i < sizeof(thread_roots) / sizeof(thread_roots[0]); i++) {
		n = strlen(thread_roots[i]);
		if (!strncmp(name, thread_roots[i], n) && (!name[n] || !strcmp(name + n, ".abi0")))
			return GO_ROOT;
	}
	return GO_OTHER;
}

static const char *const cause_names[UNWIND_NCAUSES] = {
	[UNWIND_CAUSE_NONE] = "complete",
	[UNWIND_CAUSE_NO_REGS] = "no registers",
	[UNWIND_CAUSE_NO_OBJECT] = "code outside every object",
	[UNWIND_CAUSE_NO_INFO] = "no unwind info",
	[UNWIND_CAUSE_FRAME_POINTER] = "frame pointer unknown",
	[UNWIND_CAUSE_REGISTER] = "register unknown",
	[UNWIND_CAUSE_STACK_COPY] = "stack not copied",
	[UNWIND_CAUSE_MEMORY] = "memory unreadable",
	[UNWIND_CAUSE_BAD_FRAME] = "bad frame",
	[UNWIND_CAUSE_BUDGET] = "unwind budget spent",
};

const char *unwind_cause_name(unsigned cause)
{
	return cause < UNWIND_NCAUSES ? cause_names[cause] : "unknown";
}

/* Why the step that just failed failed, from what the accessors saw. */
static unsigned step_cause(const struct unwinder *u)
{
	if (u->ev_budget)
		return UNWIND_CAUSE_BUDGET;
	if (u->ev_noobj)
		return UNWIND_CAUSE_NO_OBJECT;
	if (u->ev_noinfo)
		return UNWIND_CAUSE_NO_INFO;
	if (u->ev_reg)
		return u->ev_reg == DWARF_RBP + 1 ? UNWIND_CAUSE_FRAME_POINTER : UNWIND_CAUSE_REGISTER;
	if (u->ev_mem)
		return u->ev_copy ? UNWIND_CAUSE_STACK_COPY : UNWIND_CAUSE_MEMORY;
	return UNWIND_CAUSE_BAD_FRAME;
}

/*
 * One walk from img's registers. A step libunwind took by guessing (its
 * frame-pointer heuristic where a frame has no CFI) is not taken: a guess
 * is not shown as a caller. The walk is complete when the CFI of its last
 * frame leaves the return address undefined (clone3, _start and every
 * runtime's thread entry say so) or the return address is zero.
 */
static void walk(struct unwinder *u, const struct thread_image *img, uint64_t *pcs,
		 uint8_t *sig, size_t max, struct walk *w)
{
	unw_cursor_t c;
	unw_word_t ip = img->regs.r[DWARF_RIP], prev_sp = 0, sp;
	struct thread_image in_sigreturn;
	int r, exact, go, back;

	/*
	 * A thread sampled inside rt_sigreturn (by perf, in the kernel: ptrace
	 * stops it only once the call is done) has its user pc just past the
	 * trampoline's syscall, the trampoline's last byte, where no CFI
	 * covers it. It is the trampoline's frame all the same: unwind from
	 * the trampoline's start, which the signal frame handling knows.
	 */
	/* Stopped at the syscall itself, the mov done, is the same frame (ptrace saw it). */
	if (!is_sigreturn(u, ip)) {
		back = ip >= SIGRETURN_LEN && is_sigreturn(u, ip - SIGRETURN_LEN) ? SIGRETURN_LEN
		       : ip >= SIGRETURN_AT_SYSCALL && is_sigreturn(u, ip - SIGRETURN_AT_SYSCALL)
			       ? SIGRETURN_AT_SYSCALL
			       : 0;
		if (back) {
			in_sigreturn = *img;
			in_sigreturn.regs.r[DWARF_RIP] = ip -= back;
			img = &in_sigreturn;
		}
	}
	w->flags = 0;
	w->cause = UNWIND_CAUSE_NONE;
	sig[0] = 0;
	pcs[0] = ip;
	w->n = 1;
	u->img = img;
	u->frame_calls = 0;
	if (!(img->regs.valid & (1u << DWARF_RSP)) || unw_init_remote(&c, u->as, u) < 0) {
		w->cause = u->ev_budget ? UNWIND_CAUSE_BUDGET : UNWIND_CAUSE_NO_REGS;
		goto partial;
	}
	for (;;) {
		/* A signal frame's successor was interrupted, not called. */
		exact = is_sigreturn(u, ip);
		sig[w->n - 1] = (uint8_t)exact;
		unw_get_reg(&c, UNW_REG_SP, &prev_sp);
		u->ev_noobj = u->ev_noinfo = u->ev_mem = u->ev_copy = u->ev_reg = 0;
		u->frame_calls = 0;
		if (u->ev_budget || ++u->stack_steps > UNWIND_STACK_STEPS) {
			u->ev_budget = 1;
			w->cause = UNWIND_CAUSE_BUDGET;
			goto partial;
		}
		r = unw_step(&c);
		go = go_frame(u, pcs[w->n - 1]);
		if ((r < 0 || u->ev_budget || ((u->ev_noinfo || u->ev_noobj) && !exact)) &&
		    go != GO_ROOT) {
			w->cause = step_cause(u);
			if (w->cause == UNWIND_CAUSE_FRAME_POINTER) {
				w->fp_sp = prev_sp;
				w->fp_pc = pcs[w->n - 1];
			}
			goto partial;
		}
		if (go == GO_ROOT)
			break; /* a Go stack's outermost frame */
		if (r == 0 || unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0) {
			if (go == GO_OTHER || u->ev_budget) {
				/* A failed read is no end of the stack. */
				w->cause = u->ev_budget ? UNWIND_CAUSE_BUDGET : UNWIND_CAUSE_BAD_FRAME;
				goto partial;
			}
			break; /* the outermost frame */
		}
		unw_get_reg(&c, UNW_REG_SP, &sp);
		if (w->n == max) {
			w->flags |= UNWIND_TRUNCATED;
			break;
		}
		if (sp < prev_sp && !exact) {
			/* The stack grows down: a caller below its callee is garbage. */
			w->cause = UNWIND_CAUSE_BAD_FRAME;
			goto partial;
		}
		sig[w->n] = 0;
		pcs[w->n++] = exact ? ip : ip - 1;
	}
	u->img = NULL;
	return;
partial:
	w->flags |= UNWIND_PARTIAL;
	u->img = NULL;
}

static int scratch_reserve(struct unwinder *u, size_t max)
{
	uint64_t *p;
	uint8_t *q;

	if (u->cap2 >= max)
		return 0;
	p = realloc(u->pcs2, max * sizeof(*p));
	if (!p)
		return -1;
	u->pcs2 = p;
	q = realloc(u->sig2, max);
	if (!q)
		return -1;
	u->sig2 = q;
	u->cap2 = max;
	return 0;
}

/*
 * A sleeping thread is read without a stop, so only its sp and pc are
 * known, and the first frame whose CFA is its frame pointer (rbp) cannot
 * be unwound: no frame below it saved rbp, so rbp there is the thread's
 * live register. Its value is the address of that frame's record (saved
 * rbp, return address) on the copied stack, somewhere above the frame's
 * sp. A candidate address a is tried only when it could be the record:
 * 16-byte aligned (the ABI's alignment after "push %rbp"), its return
 * address preceded by a call instruction, and a direct call going to this
 * very function (or through a PLT stub) — stale records left by earlier
 * calls return into other functions. A candidate is accepted only when the
 * whole walk from it reaches the thread's start with every frame's CFI;
 * the lowest such candidate wins. Otherwise the stack stays partial.
 * 0 when recovered (pcs, sig and *w replaced), else -1.
 */
static int recover_frame_pointer(struct unwinder *u, const struct thread_image *img,
				 uint64_t *pcs, uint8_t *sig, size_t max, struct walk *w)
{
	struct thread_image t = *img;
	const struct stack_region *r;
	unw_proc_info_t pi;
	uint64_t a, hi, end, ret, target;
	struct walk w2;
	int kind, k, tries = 0;

	/* The frame record is on the stack that holds the frame's sp. */
	if ((img->regs.valid & (1u << DWARF_RBP)) || (k = unwind_region_of(img, w->fp_sp)) < 0 ||
	    scratch_reserve(u, max) < 0)
		return -1;
	r = &img->stack[k];
	memset(&pi, 0, sizeof(pi));
	u->img = img;
	kind = unwind_accessors.find_proc_info(u->as, w->fp_pc, &pi, 0, u);
	u->img = NULL;
	if (kind < 0)
		return -1;
	end = r->addr + r->len;
	if (w->fp_sp >= end)
		return -1; /* also keeps the sums below from wrapping */
	hi = end - w->fp_sp > FP_SCAN_MAX ? w->fp_sp + FP_SCAN_MAX : end;
	for (a = (w->fp_sp + 15) & ~(uint64_t)15; a + 16 <= hi && tries < FP_TRIES; a += 16) {
		memcpy(&ret, r->bytes + (a + 8 - r->addr), sizeof(ret));
		kind = callsite_classify(u->space, ret, &target);
		if (kind == CALLSITE_NONE)
			continue;
		if (kind == CALLSITE_DIRECT && target != pi.start_ip &&
		    !callsite_is_stub(u->space, target))
			continue;
		tries++;
		t.regs.r[DWARF_RBP] = a;
		t.regs.valid = img->regs.valid | 1u << DWARF_RBP;
		walk(u, &t, u->pcs2, u->sig2, max, &w2);
		if (w2.flags & UNWIND_PARTIAL)
			continue;
		memcpy(pcs, u->pcs2, w2.n * sizeof(*pcs));
		memcpy(sig, u->sig2, w2.n);
		*w = w2;
		w->flags |= UNWIND_RECOVERED;
		return 0;
	}
	return -1;
}


/* The word at addr on the copied stack of t. 0, or -1 when it was not copied. */
static int stack_word(const struct thread_image *t, uint64_t addr, uint64_t *v)
{
	int k = unwind_region_of(t, addr);

	if (k < 0)
		return -1;
	memcpy(v, t->stack[k].bytes + (addr - t->stack[k].addr), sizeof(*v));
	return 0;
}

/*
 * Whether ret can be where code in an object resumes after calling into
 * JIT code: a return address inside a mapped object, just after a call
 * instruction (a call into generated code is indirect, or goes through a
 * stub).
 */
static int jit_return(struct unwinder *u, uint64_t ret)
{
	uint64_t target;

	return space_find(u->space, ret) && callsite_classify(u->space, ret, &target) != CALLSITE_NONE;
}

/*
 * The leaf img stands in has no frame of its own: its return address is
 * the word at sp, where code in an object resumes after a call. The walk
 * from there must be complete; then the stack is the leaf and that walk.
 * 0 when recovered, else -1.
 */
static int frameless_leaf(struct unwinder *u, const struct thread_image *img, uint64_t *pcs,
			  uint8_t *sig, size_t max, struct walk *w)
{
	struct thread_image t = *img;
	uint64_t sp = img->regs.r[DWARF_RSP], ret;
	struct walk w2;

	if (w->n != 1 || max < 2 || !(img->regs.valid & (1u << DWARF_RSP)) ||
	    scratch_reserve(u, max) < 0 || stack_word(img, sp, &ret) < 0 || !jit_return(u, ret))
		return -1;
	t.regs.r[DWARF_RIP] = ret;
	t.regs.r[DWARF_RSP] = sp + 8;
	walk(u, &t, u->pcs2, u->sig2, max - 1, &w2);
	if (w2.flags & UNWIND_PARTIAL)
		return -1;
	u->pcs2[0] = ret - 1; /* a return address, like every caller's */
	memcpy(pcs + 1, u->pcs2, w2.n * sizeof(*pcs));
	memcpy(sig + 1, u->sig2, w2.n);
	*w = w2;
	w->n += 1;
	return 0;
}

/*
 * A thread caught on a PLT-style stub (an indirect jump through memory)
 * that has no CFI: a static binary's .plt for its ifuncs has none. The
 * stub is entered by a call, or by a tail call's jump (static glibc jumps
 * to its memcpy stub from six places), and touches no register but the
 * pc, so the return address is the word at sp, and that is checked: it
 * must follow a call (a direct one to this stub, or to the function that
 * jumped here: which one is not known, so any direct call is taken). The
 * walk then goes on from the caller and must be complete. 0 when
 * recovered, else -1.
 */
static int recover_stub_leaf(struct unwinder *u, const struct thread_image *img, uint64_t *pcs,
			     uint8_t *sig, size_t max, struct walk *w)
{
	if (!callsite_is_stub(u->space, img->regs.r[DWARF_RIP]))
		return -1;
	return frameless_leaf(u, img, pcs, sig, max, w);
}

/*
 * A thread caught in code outside every object (a JIT's generated code,
 * which has no CFI cprof can read) continues where a JIT's frames allow:
 * either the leaf has no frame of its own and the word at sp is its
 * return address into an object, or rbp (known when the thread was
 * stopped) heads a chain of frame records (saved rbp, return address),
 * the frame-pointer convention JITs keep (V8, the JVM, .NET, LuaJIT's
 * traces), through JIT frames until a return address lands in an object.
 * Every JIT frame's return address is kept (a perf map names them) and
 * the walk from the object must be complete; otherwise the stack stays
 * partial. 0 when recovered, else -1.
 */
static int recover_jit(struct unwinder *u, const struct thread_image *img, uint64_t *pcs,
		       uint8_t *sig, size_t max, struct walk *w)
{
	struct thread_image t = *img;
	uint64_t sp = img->regs.r[DWARF_RSP], fp = img->regs.r[DWARF_RBP], ret, saved;
	size_t njit = 1, i;
	struct walk w2;

	if (w->n != 1 || max < 2 || !(img->regs.valid & (1u << DWARF_RSP)) ||
	    scratch_reserve(u, max) < 0)
		return -1;
	/* A frameless leaf: its return address at sp. */
	if (frameless_leaf(u, img, pcs, sig, max, w) == 0)
		return 0;
	/* A chain of frame records, each above the last. */
	if (!(img->regs.valid & (1u << DWARF_RBP)) || fp < sp)
		return -1;
	for (i = 0; i < 256 && njit < max - 1; i++) {
		if (stack_word(img, fp, &saved) < 0 || stack_word(img, fp + 8, &ret) < 0)
			return -1;
		if (jit_return(u, ret)) {
			t.regs.r[DWARF_RIP] = ret;
			t.regs.r[DWARF_RSP] = fp + 16;
			t.regs.r[DWARF_RBP] = saved;
			t.regs.valid = img->regs.valid | 1u << DWARF_RBP;
			walk(u, &t, u->pcs2, u->sig2, max - njit, &w2);
			if (w2.flags & UNWIND_PARTIAL)
				return -1;
			goto join;
		}
		if (space_find(u->space, ret) || saved <= fp)
			return -1; /* into an object without a call before it, or not up the stack */
		pcs[njit] = ret - 1;
		sig[njit++] = 0;
		fp = saved;
	}
	return -1;
join:
	u->pcs2[0] = t.regs.r[DWARF_RIP] - 1; /* a return address, like every caller's */
	memcpy(pcs + njit, u->pcs2, w2.n * sizeof(*pcs));
	memcpy(sig + njit, u->sig2, w2.n);
	*w = w2;
	w->n += njit;
	return 0;
}

/*
 * glibc's clone and clone3 end their CFI before the syscall ("in the
 * child the unwind info will be wrong"), so a thread sampled from the
 * syscall to the jump to its start code has no CFI at its pc: a
 * thread-per-request service showed a visible part of its CPU as clone3 ->
 * [partial: no unwind info]. In the child (rax 0, the syscall's result
 * there: its first instant) the stack is that one frame, whole: it has no
 * caller. In the parent (rax the new tid, or -ENOSYS while the kernel
 * makes the thread) the wrapper has pushed nothing: its return address is
 * at sp. Returns 1 for the child, 2 for the parent, 0 for other code.
 */
static int clone_side(struct unwinder *u, const struct thread_image *img)
{
	static const char *const wrappers[] = { "clone3", "__clone3", "clone", "__clone" };
	struct space_obj *o;
	const char *name;
	size_t i;

	if ((img->regs.valid & 1u) == 0 || !(o = space_find(u->space, img->regs.r[DWARF_RIP])) ||
	    !(name = space_symbol(u->space, o, img->regs.r[DWARF_RIP], NULL)))
		return 0;
	for (i = 0; i < sizeof(wrappers) / sizeof(wrappers[0]); i++)
		if (!strcmp(name, wrappers[i]))
			return img->regs.r[0] == 0 ? 1 : 2;
	return 0;
}

size_t unwinder_unwind(struct unwinder *u, const struct thread_image *img, uint64_t *pcs,
		       uint8_t *sig, size_t max, unsigned *flags)
{
	struct walk w;
	int side;

	*flags = 0;
	memset(u->used, 0, sizeof(u->used));
	memset(u->overran, 0, sizeof(u->overran));
	u->ev_budget = 0;
	u->stack_calls = u->stack_steps = 0;
	if (max == 0 || !(img->regs.valid & (1u << DWARF_RIP)))
		return 0;
	walk(u, img, pcs, sig, max, &w);
	if (w.cause == UNWIND_CAUSE_FRAME_POINTER)
		recover_frame_pointer(u, img, pcs, sig, max, &w);
	else if (w.cause == UNWIND_CAUSE_NO_INFO && recover_stub_leaf(u, img, pcs, sig, max, &w) < 0 &&
		 w.n == 1 && (side = clone_side(u, img)) != 0) {
		if (side == 1) {
			w.flags &= ~UNWIND_PARTIAL;
			w.cause = UNWIND_CAUSE_NONE;
		} else {
			frameless_leaf(u, img, pcs, sig, max, &w);
		}
	}
	else if (w.cause == UNWIND_CAUSE_NO_OBJECT)
		recover_jit(u, img, pcs, sig, max, &w);
	/* A repair that spent the budget: that is why the stack stays partial. */
	if ((w.flags & UNWIND_PARTIAL) && u->ev_budget)
		w.cause = UNWIND_CAUSE_BUDGET;
	*flags = w.flags | w.cause << UNWIND_CAUSE_SHIFT;
	return w.n;
}

size_t unwinder_stack_used(const struct unwinder *u, unsigned region, int *overran)
{
	*overran = region < IMAGE_MAX_REGIONS && u->overran[region];
	return region < IMAGE_MAX_REGIONS ? u->used[region] : 0;
}
