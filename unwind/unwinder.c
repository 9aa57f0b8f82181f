/*
 * unwinder.c — libunwind's remote API over a copied thread. The accessors
 * answer register reads from the copied registers, memory reads inside the
 * copied stack from the copy, and all other reads (unwind tables, code for
 * signal-frame detection) from the objects' files through struct space.
 * Procedure info comes from each object's .eh_frame_hdr binary-search
 * table, handed to libunwind's dwarf_search_unwind_table as a remote table,
 * which is what libunwind's own ptrace accessors do, minus the ptrace.
 * libunwind's global cache keeps parsed CIEs/FDEs across samples, so the
 * steady-state cost of a frame is a table search plus a few word reads.
 */
#include <stdlib.h>
#include <string.h>

#include <libunwind.h>

#include "unwind/space.h"
#include "unwind/unwinder.h"

/* Exported by libunwind but not declared in its public headers. */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* How far above sp a read is taken for a stack read past the copy. */
#define STACK_REACH (1u << 20)

struct unwinder {
	struct space *space;
	unw_addr_space_t as;
	const struct thread_image *img; /* the thread being unwound */
	size_t used;                    /* bytes of the copy the last walk read */
	int overran;                    /* it wanted stack bytes past the copy */
};

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct unwinder *u = arg;
	struct space_obj *o = space_find(u->space, ip);
	unw_dyn_info_t di;

	if (!o || !o->eh_count)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = o->text_start ? o->text_start : o->base;
	di.end_ip = o->text_end ? o->text_end : (unw_word_t)-1;
	di.u.rti.segbase = o->eh_hdr;
	di.u.rti.table_data = o->eh_table;
	di.u.rti.table_len = o->eh_count * 8 / sizeof(unw_word_t);
	if (ip < di.start_ip || ip >= di.end_ip) {
		/* Code outside the first text mapping (rare): search anyway. */
		di.start_ip = o->base;
		di.end_ip = (unw_word_t)-1;
	}
	return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

/* libunwind frees the table-format unwind info it allocated itself. */
static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)pi;
	(void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dil, void *arg)
{
	(void)as;
	(void)dil;
	(void)arg;
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
		      void *arg)
{
	struct unwinder *u = arg;
	const struct thread_image *t = u->img;

	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	if (addr >= t->stack_addr && addr - t->stack_addr <= t->stack_len &&
	    t->stack_len - (addr - t->stack_addr) >= sizeof(*val)) {
		memcpy(val, t->stack + (addr - t->stack_addr), sizeof(*val));
		if (addr - t->stack_addr + sizeof(*val) > u->used)
			u->used = addr - t->stack_addr + sizeof(*val);
		return 0;
	}
	if (space_read(u->space, addr, val, sizeof(*val)) == 0)
		return 0;
	if (addr >= t->stack_addr && addr - t->stack_addr < STACK_REACH)
		u->overran = 1;
	return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write,
		      void *arg)
{
	struct unwinder *u = arg;
	const struct regs *r = &u->img->regs;

	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	if (reg < 0 || reg >= DWARF_NREGS || !(r->valid & (1u << reg)))
		return -UNW_EBADREG;
	*val = r->r[reg];
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
			void *arg)
{
	(void)as;
	(void)reg;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as;
	(void)c;
	(void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			 unw_word_t *off, void *arg)
{
	(void)as;
	(void)addr;
	(void)buf;
	(void)len;
	(void)off;
	(void)arg;
	return -UNW_ENOINFO;
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

struct unwinder *unwinder_new(struct space *space)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->space = space;
	u->as = unw_create_addr_space(&accessors, 0);
	if (!u->as) {
		free(u);
		return NULL;
	}
	/* Only one thread unwinds: a per-thread cache needs no lock, and
	 * libunwind brackets every global-cache lock with two sigprocmask
	 * calls (measured: 30 syscalls per stack). */
	unw_set_caching_policy(u->as, UNW_CACHE_PER_THREAD);
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	unw_destroy_addr_space(u->as);
	free(u);
}

/*
 * Whether ip is the x86_64 Linux signal trampoline, "mov $15,%rax;
 * syscall" (rt_sigreturn), which the kernel makes every handler return
 * to. libunwind 1.6 only knows after stepping; matching the code bytes,
 * read from the object's file, is cheap and exact.
 */
static int is_sigreturn(struct unwinder *u, unw_word_t ip)
{
	static const unsigned char code[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	unsigned char b[sizeof(code)];

	return space_read(u->space, ip, b, sizeof(b)) == 0 && !memcmp(b, code, sizeof(code));
}

size_t unwinder_unwind(struct unwinder *u, const struct thread_image *img, uint64_t *pcs,
		       uint8_t *sig, size_t max, unsigned *flags)
{
	unw_cursor_t c;
	unw_word_t ip = img->regs.r[DWARF_RIP], prev_sp = 0, sp;
	size_t n = 0;
	int r, exact = 1;

	*flags = 0;
	u->used = 0;
	u->overran = 0;
	if (max == 0 || !(img->regs.valid & (1u << DWARF_RIP)))
		return 0;
	if (sig)
		sig[0] = 0;
	pcs[n++] = img->regs.r[DWARF_RIP];
	u->img = img;
	if (!(img->regs.valid & (1u << DWARF_RSP)) || unw_init_remote(&c, u->as, u) < 0) {
		*flags |= UNWIND_PARTIAL;
		goto out;
	}
	for (;;) {
		/* A signal frame's successor was interrupted, not called. */
		exact = is_sigreturn(u, ip);
		if (sig)
			sig[n - 1] = (uint8_t)exact;
		unw_get_reg(&c, UNW_REG_SP, &prev_sp);
		r = unw_step(&c);
		if (r == 0)
			break; /* the outermost frame */
		if (r < 0) {
			*flags |= UNWIND_PARTIAL;
			break;
		}
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		unw_get_reg(&c, UNW_REG_SP, &sp);
		if (n == max) {
			*flags |= UNWIND_TRUNCATED;
			break;
		}
		if (sp < prev_sp && !exact) {
			/* The stack grows down: a caller below its callee is garbage. */
			*flags |= UNWIND_PARTIAL;
			break;
		}
		if (sig)
			sig[n] = 0;
		pcs[n++] = exact ? ip : ip - 1;
	}
out:
	u->img = NULL;
	return n;
}

size_t unwinder_stack_used(const struct unwinder *u, int *overran)
{
	*overran = u->overran;
	return u->used;
}
