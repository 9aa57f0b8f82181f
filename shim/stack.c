/*
 * stack.c — stack capture for sampled allocations and thread creations.
 * Code built without frame pointers can only be unwound with its DWARF
 * call-frame information (.eh_frame). libgcc's _Unwind_Backtrace does
 * that without locks since gcc 12 and glibc 2.35 (it finds unwind tables
 * with the lock-free _dl_find_object; older unwinders walk
 * dl_iterate_phdr under the loader lock, which deadlocks against a thread
 * that holds that lock in dlopen and calls malloc), but it re-parses the
 * CIE and FDE and re-runs the CFA program of every frame on every call,
 * most of the shim's cost on an allocation-heavy program. So the shim
 * walks the stack itself, with a cache of per-return-address rules (CFA =
 * rsp or rbp + offset, where rbp was saved) filled by a small CFA-program
 * interpreter for the forms compilers emit for x86-64 code; a cached
 * frame costs ~15 instructions. Anything else (signal frames, DWARF
 * expressions, unusual encodings) falls back to _Unwind_Backtrace for the
 * whole stack. Both find unwind tables through _dl_find_object: no lock,
 * no allocation.
 */
#include "shim/stack.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <unwind.h>

#include "shim/segment.h"

static uintptr_t stack_skip_lo, stack_skip_hi;

_Unwind_Reason_Code stack_step(struct _Unwind_Context *ctx, void *arg)
{
	struct stack_walk *w = arg;
	uintptr_t ip = w->u->getip(ctx);

	if (ip == 0)
		return _URC_END_OF_STACK;
	if (!w->started) {
		if (ip >= stack_skip_lo && ip < stack_skip_hi)
			return _URC_NO_REASON;
		w->started = 1;
	}
	if (w->n == w->max) {
		w->flags |= SEG_BUCKET_TRUNCATED;
		return _URC_END_OF_STACK;
	}
	w->frames[w->n++] = ip;
	return _URC_NO_REASON;
}

/*
 * How to unwind one frame at a given return address: CFA = (rbp if
 * cfa_rbp else rsp) + cfa_off; the return address is at CFA - 8; if
 * rbp_slot, the caller's rbp is at CFA - 8 * rbp_slot (else rbp is
 * unchanged). end: the outermost frame (return address undefined).
 */
struct stack_rule {
	uint32_t cfa_rbp, cfa_off, rbp_slot, end;
};

/*
 * The rule cache: direct-mapped, 4096 entries, shared by all threads
 * without a lock. An entry is { ip, low 32 bits of ip << 32 | packed rule };
 * a reader racing a writer sees a key and a tag that disagree and misses.
 */
#define STACK_CACHE_LOG2 12
#define STACK_MAX_FRAME (1u << 24) /* a frame larger than 16 MiB ends the walk */
static uint64_t stack_cache[1u << STACK_CACHE_LOG2][2];

static uint64_t *stack_cache_slot(uint64_t ip)
{
	return stack_cache[(ip * 0x9E3779B97F4A7C15ull) >> (64 - STACK_CACHE_LOG2)];
}

static int stack_cache_get(uint64_t ip, struct stack_rule *r)
{
	uint64_t *e = stack_cache_slot(ip), k, v;

	k = __atomic_load_n(&e[0], __ATOMIC_ACQUIRE);
	v = __atomic_load_n(&e[1], __ATOMIC_ACQUIRE);
	if (k != ip || (uint32_t)(v >> 32) != (uint32_t)ip)
		return 0;
	r->cfa_rbp = (uint32_t)v & 1;
	r->end = ((uint32_t)v >> 1) & 1;
	r->rbp_slot = ((uint32_t)v >> 2) & 0xff;
	r->cfa_off = (uint32_t)v >> 10;
	return 1;
}

static void stack_cache_put(uint64_t ip, const struct stack_rule *r)
{
	uint64_t *e = stack_cache_slot(ip);

	if (r->cfa_off >= (1u << 22) || r->rbp_slot > 0xff)
		return; /* not representable: computed each time */
	__atomic_store_n(&e[0], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&e[1], (uint64_t)(uint32_t)ip << 32 | r->cfa_off << 10 | r->rbp_slot << 2 |
					 r->end << 1 | r->cfa_rbp, __ATOMIC_RELEASE);
	__atomic_store_n(&e[0], ip, __ATOMIC_RELEASE);
}

/* A bounded reader of DWARF data: every read checks the end. */
struct stack_cursor {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t stack_u(struct stack_cursor *c, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

/* LEB128: the value, and in *shift the bits it spans (for sign extension). */
static uint64_t stack_leb(struct stack_cursor *c, unsigned *shift, uint8_t *last)
{
	uint64_t v = 0;
	uint8_t b;

	*shift = 0;
	do {
		b = (uint8_t)stack_u(c, 1);
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
	} while ((b & 0x80) && !c->bad);
	*last = b;
	return v;
}

static uint64_t stack_uleb(struct stack_cursor *c)
{
	unsigned shift;
	uint8_t b;

	return stack_leb(c, &shift, &b);
}

static int64_t stack_sleb(struct stack_cursor *c)
{
	unsigned shift;
	uint8_t b;
	uint64_t v = stack_leb(c, &shift, &b);

	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/*
 * A DW_EH_PE-encoded pointer: absptr/udata/sdata 4 and 8, uleb/sleb,
 * absolute or pc-relative; anything else (datarel, indirect, ...) fails.
 */
static uint64_t stack_ptr(struct stack_cursor *c, uint8_t enc)
{
	const uint8_t *at = c->p;
	uint64_t v;

	if (enc == 0xff) /* DW_EH_PE_omit */
		return 0;
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: v = stack_u(c, 8); break;
	case 0x03: v = stack_u(c, 4); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)stack_u(c, 4); break;
	case 0x01: v = stack_uleb(c); break;
	case 0x09: v = (uint64_t)stack_sleb(c); break;
	default: c->bad = 1; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += (uint64_t)(uintptr_t)at; break;
	default: c->bad = 1;
	}
	return v;
}

/* The CFA-program state the interpreter tracks (x86-64 DWARF numbers: rbp 6, rsp 7, ra 16). */
struct stack_state {
	uint64_t cfa_reg;
	int64_t cfa_off, rbp_off, ra_off; /* rbp_off 0: rbp not saved */
	int ra_undefined;
};

/*
 * Runs CFA instructions until the location passes target. 0, or -1 for
 * anything this interpreter does not model (the caller falls back).
 */
static int stack_run(struct stack_cursor *c, struct stack_state *st, const struct stack_state *init,
		     uint64_t loc, uint64_t target, uint64_t code_align, int64_t data_align)
{
	struct stack_state saved[4];
	unsigned depth = 0;
	uint64_t reg, n;
	int64_t off;

	while (c->p < c->end && !c->bad) {
		uint8_t op = (uint8_t)stack_u(c, 1), low = op & 0x3f;

		switch (op >> 6) {
		case 1: /* advance_loc */
			loc += low * code_align;
			if (loc > target)
				return 0;
			continue;
		case 2: /* offset */
			reg = low;
			off = (int64_t)stack_uleb(c) * data_align;
			goto set_offset;
		case 3: /* restore */
			reg = low;
			goto restore;
		}
		switch (op) {
		case 0x00: break; /* nop */
		case 0x02: case 0x03: case 0x04: /* advance_loc1/2/4 */
			loc += stack_u(c, op == 0x02 ? 1 : op == 0x03 ? 2 : 4) * code_align;
			if (loc > target)
				return 0;
			break;
		case 0x05: /* offset_extended */
			reg = stack_uleb(c);
			off = (int64_t)stack_uleb(c) * data_align;
			goto set_offset;
		case 0x11: /* offset_extended_sf */
			reg = stack_uleb(c);
			off = stack_sleb(c) * data_align;
			goto set_offset;
		case 0x06: /* restore_extended */
			reg = stack_uleb(c);
			goto restore;
		case 0x07: case 0x08: /* undefined, same_value */
			reg = stack_uleb(c);
			if (reg == 16 && op == 0x07)
				st->ra_undefined = 1;
			else if (reg == 16 || reg == 7)
				return -1;
			else if (reg == 6)
				st->rbp_off = 0;
			break;
		case 0x09: /* register */
			reg = stack_uleb(c);
			(void)stack_uleb(c);
			if (reg == 6 || reg == 7 || reg == 16)
				return -1;
			break;
		case 0x0a: /* remember_state */
			if (depth == 4)
				return -1;
			saved[depth++] = *st;
			break;
		case 0x0b: /* restore_state */
			if (depth == 0)
				return -1;
			*st = saved[--depth];
			break;
		case 0x0c: /* def_cfa */
			st->cfa_reg = stack_uleb(c);
			st->cfa_off = (int64_t)stack_uleb(c);
			break;
		case 0x12: /* def_cfa_sf */
			st->cfa_reg = stack_uleb(c);
			st->cfa_off = stack_sleb(c) * data_align;
			break;
		case 0x0d: /* def_cfa_register */
			st->cfa_reg = stack_uleb(c);
			break;
		case 0x0e: /* def_cfa_offset */
			st->cfa_off = (int64_t)stack_uleb(c);
			break;
		case 0x13: /* def_cfa_offset_sf */
			st->cfa_off = stack_sleb(c) * data_align;
			break;
		case 0x10: case 0x16: /* expression, val_expression */
			reg = stack_uleb(c);
			n = stack_uleb(c);
			if (reg == 6 || reg == 7 || reg == 16 || n > (uint64_t)(c->end - c->p))
				return -1;
			c->p += n;
			break;
		case 0x14: case 0x15: /* val_offset(_sf) */
			reg = stack_uleb(c);
			if (op == 0x14)
				(void)stack_uleb(c);
			else
				(void)stack_sleb(c);
			if (reg == 6 || reg == 7 || reg == 16)
				return -1;
			break;
		case 0x2e: /* GNU_args_size */
			(void)stack_uleb(c);
			break;
		default: /* def_cfa_expression and the rest */
			return -1;
		}
		continue;
set_offset:
		if (reg == 6)
			st->rbp_off = off;
		else if (reg == 16)
			st->ra_off = off;
		else if (reg == 7)
			return -1;
		continue;
restore:
		if (init == NULL)
			return -1; /* restore inside the CIE itself */
		if (reg == 6)
			st->rbp_off = init->rbp_off;
		else if (reg == 16)
			st->ra_off = init->ra_off;
	}
	return c->bad ? -1 : 0;
}

/*
 * The rule for the frame whose return address (or, for the first frame,
 * resume address) is ip: looks ip - 1 up in the object's .eh_frame_hdr
 * binary-search table, parses the CIE and FDE and runs both programs.
 * 0; -2 when no FDE covers ip (libgcc could not go on either: the walk
 * ends there); -1 when the FDE is beyond what this interpreter models.
 */
static int stack_rule_find(uint64_t ip, struct stack_rule *r)
{
	struct dl_find_object obj;
	struct stack_cursor c, cie;
	struct stack_state st = { 7, 8, 0, -8, 0 }, init;
	const uint8_t *hdr, *table, *fde, *cie_p, *field;
	uint64_t pc = ip - 1, count, lo, hi, pc_begin, pc_range, code_align, len, cie_len;
	int64_t data_align, fde_rel;
	uint8_t enc = 0, version;
	const char *aug;
	int has_z;

	if (_dl_find_object((void *)(uintptr_t)pc, &obj) != 0 || obj.dlfo_eh_frame == NULL)
		return -2;
	hdr = obj.dlfo_eh_frame;
	/* version 1, eh_frame_ptr any, fde_count udata4, table datarel sdata4 */
	if (hdr[0] != 1 || hdr[2] != 0x03 || hdr[3] != 0x3b)
		return -1;
	c = (struct stack_cursor){ hdr + 4, hdr + 4 + 16, 0 };
	(void)stack_ptr(&c, hdr[1]);
	count = stack_u(&c, 4);
	if (c.bad || count == 0)
		return -1;
	table = c.p;
	lo = 0;
	hi = count;
	while (hi - lo > 1) { /* last entry whose start <= pc */
		uint64_t mid = (lo + hi) / 2;
		int32_t start;

		memcpy(&start, table + mid * 8, 4);
		if ((uint64_t)(uintptr_t)hdr + (uint64_t)(int64_t)start <= pc)
			lo = mid;
		else
			hi = mid;
	}
	memcpy(&fde_rel, table + lo * 8 + 4, 4);
	fde_rel = (int32_t)fde_rel;
	fde = hdr + fde_rel;

	/* FDE: length, CIE pointer (relative to itself), then the CIE's encodings. */
	memcpy(&len, fde, 4);
	len = (uint32_t)len;
	if (len == 0 || len == 0xffffffffu)
		return -1;
	c = (struct stack_cursor){ fde + 4, fde + 4 + len, 0 };
	field = c.p;
	cie_p = field - (uint32_t)stack_u(&c, 4);
	memcpy(&cie_len, cie_p, 4);
	cie_len = (uint32_t)cie_len;
	if (cie_len == 0 || cie_len == 0xffffffffu)
		return -1;
	cie = (struct stack_cursor){ cie_p + 4, cie_p + 4 + cie_len, 0 };
	if (stack_u(&cie, 4) != 0) /* CIE id */
		return -1;
	version = (uint8_t)stack_u(&cie, 1);
	aug = (const char *)cie.p;
	while (cie.p < cie.end && *cie.p)
		cie.p++;
	(void)stack_u(&cie, 1);
	code_align = stack_uleb(&cie);
	data_align = stack_sleb(&cie);
	if ((version == 1 ? stack_u(&cie, 1) : stack_uleb(&cie)) != 16 || cie.bad)
		return -1;
	has_z = aug[0] == 'z';
	if (has_z) {
		uint64_t alen = stack_uleb(&cie);
		const uint8_t *after = cie.p + alen;

		for (aug++; *aug && !cie.bad; aug++) {
			if (*aug == 'R')
				enc = (uint8_t)stack_u(&cie, 1);
			else if (*aug == 'L')
				(void)stack_u(&cie, 1);
			else if (*aug == 'P')
				(void)stack_ptr(&cie, (uint8_t)(stack_u(&cie, 1) & 0x7f));
			else
				return -1; /* 'S' (signal frame) and anything unknown */
		}
		if (cie.bad || after > cie.end)
			return -1;
		cie.p = after;
	} else if (aug[0] != '\0') {
		return -1;
	}
	pc_begin = stack_ptr(&c, enc);
	pc_range = stack_ptr(&c, enc & 0x0f);
	if (c.bad)
		return -1;
	if (pc < pc_begin || pc - pc_begin >= pc_range)
		return -2; /* not covered: no FDE for ip */
	if (has_z) {
		len = stack_uleb(&c); /* FDE augmentation data: skipped */
		if (len > (uint64_t)(c.end - c.p))
			return -1;
		c.p += len;
	}
	if (stack_run(&cie, &st, NULL, 0, 0, code_align, data_align) != 0)
		return -1;
	init = st;
	if (stack_run(&c, &st, &init, pc_begin, pc, code_align, data_align) != 0)
		return -1;
	if ((st.cfa_reg != 7 && st.cfa_reg != 6) || st.cfa_off < 0 || st.ra_off != -8 ||
	    st.rbp_off > 0 || (-st.rbp_off) % 8 != 0)
		return -1;
	r->cfa_rbp = st.cfa_reg == 6;
	r->cfa_off = (uint32_t)st.cfa_off;
	r->rbp_slot = (uint32_t)(-st.rbp_off / 8);
	r->end = (uint32_t)st.ra_undefined;
	return 0;
}

/* The registers the walk needs, as they are right after stack_grab returns. */
struct stack_regs {
	uint64_t ip, sp, rbp;
};

void stack_grab(struct stack_regs *r) __attribute__((visibility("hidden")));
__asm__(".text\n"
	".p2align 4\n"
	".type stack_grab, @function\n"
	"stack_grab:\n"
	"\t.cfi_startproc\n"
	"\tmovq (%rsp), %rax\n"
	"\tmovq %rax, 0(%rdi)\n"
	"\tleaq 8(%rsp), %rax\n"
	"\tmovq %rax, 8(%rdi)\n"
	"\tmovq %rbp, 16(%rdi)\n"
	"\tret\n"
	"\t.cfi_endproc\n"
	".size stack_grab, .-stack_grab\n");

__attribute__((noinline)) uint32_t stack_capture_fast(uint64_t *frames, uint32_t max, uint32_t *flags)
{
	struct stack_regs g;
	struct stack_rule r;
	uint64_t ip, sp, rbp, cfa;
	uint32_t n = 0;
	int started = 0, rc;

	*flags = 0;
	if (max > SEG_MAX_FRAMES)
		max = SEG_MAX_FRAMES;
	stack_grab(&g);
	ip = g.ip;
	sp = g.sp;
	rbp = g.rbp;
	for (;;) {
		rc = 0;
		if (!stack_cache_get(ip, &r)) {
			rc = stack_rule_find(ip, &r);
			if (rc == -1 || (rc == -2 && !started))
				return UINT32_MAX; /* not modelled: the caller falls back */
			if (rc == 0)
				stack_cache_put(ip, &r);
		}
		if (started || ip < stack_skip_lo || ip >= stack_skip_hi) {
			started = 1;
			if (n == max) {
				*flags = SEG_BUCKET_TRUNCATED;
				return n;
			}
			frames[n++] = ip;
		}
		if (rc == -2 || r.end)
			return n; /* no unwind info for ip (e.g. JIT code): it is the last frame */
		cfa = (r.cfa_rbp ? rbp : sp) + r.cfa_off;
		if (cfa <= sp || cfa - sp > STACK_MAX_FRAME || (cfa & 7) != 0)
			return n; /* not a plausible caller frame: stop here */
		if (r.rbp_slot)
			rbp = *(const uint64_t *)(cfa - 8 * r.rbp_slot);
		ip = *(const uint64_t *)(cfa - 8);
		sp = cfa;
		if (ip == 0)
			return n;
	}
}

int stack_object_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
	struct dl_find_object r;

	if (_dl_find_object((void *)addr, &r) != 0)
		return -1;
	*lo = (uintptr_t)r.dlfo_map_start;
	*hi = (uintptr_t)r.dlfo_map_end;
	return 0;
}

static const struct stack_unwinder stack_private = { _Unwind_Backtrace, _Unwind_GetIP };
static struct stack_unwinder stack_process;
const struct stack_unwinder *stack_unwinder = &stack_private;

void stack_pick_unwinder(void)
{
	void *bt = dlsym(RTLD_DEFAULT, "_Unwind_Backtrace"), *ip = dlsym(RTLD_DEFAULT, "_Unwind_GetIP");

	/* The process's own libgcc_s when it has one: it knows the frames JITs register with it. */
	if (bt != NULL && ip != NULL && stack_unwinder == &stack_private) {
		stack_process.backtrace = (_Unwind_Reason_Code (*)(_Unwind_Trace_Fn, void *))bt;
		stack_process.getip = (_Unwind_Ptr (*)(struct _Unwind_Context *))ip;
		__atomic_store_n(&stack_unwinder, &stack_process, __ATOMIC_RELEASE);
	}
}

void stack_init_range(uintptr_t lo, uintptr_t hi)
{
	uint64_t frames[SEG_MAX_FRAMES];
	uint32_t flags;

	stack_skip_lo = lo;
	stack_skip_hi = hi;
	/* Written now so that no later write to it faults (see blocks.c). */
	memset(stack_cache, 0, sizeof(stack_cache));
	(void)stack_capture(frames, SEG_MAX_FRAMES, &flags);
}

void stack_init(uintptr_t lo, uintptr_t hi)
{
	stack_pick_unwinder();
	stack_init_range(lo, hi);
}
