/*
 * access.c — libunwind's remote accessors over a copied thread. They
 * answer register reads from the copied registers, memory reads inside the
 * copied stack from the copy, and all other reads (unwind tables, code for
 * signal-frame detection) from the objects' files through struct space.
 * Procedure info comes from each object's .eh_frame_hdr binary-search
 * table, handed to libunwind's dwarf_search_unwind_table as a remote table,
 * which is what libunwind's own ptrace accessors do, minus the ptrace; an
 * object without one (static, Go) gets the table space builds over its
 * .eh_frame or .debug_frame (unwind/cfitab.h).
 * libunwind's global cache keeps parsed CIEs/FDEs across samples, so the
 * steady-state cost of a frame is a table search plus a few word reads.
 * Every accessor first spends one call of the walk's budget
 * (unwinder_int.h): libunwind fetches each byte of a CFI program and of a
 * DWARF expression through access_mem, so the budget bounds them all, a
 * DW_OP_skip back onto itself included.
 */
#include <stdlib.h>
#include <string.h>

#include <libunwind.h>

#include "unwind/callsite.h"
#include "unwind/space.h"
#include "unwind/unwinder_int.h"

/* Exported by libunwind but not declared in its public headers. */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/*
 * Search obj's table of kind SPACE_CFI_* built by space (no .eh_frame_hdr:
 * a bare .eh_frame, or .debug_frame converted). Offsets in that table are
 * relative to its first function (UNW_INFO_FORMAT_IP_OFFSET), which keeps
 * them in int32 whatever synthetic address the table is read at.
 */
static int search_cfi(struct unwinder *u, unw_addr_space_t as, unw_word_t ip,
		      struct space_obj *o, int kind, unw_proc_info_t *pi, int need_unwind_info)
{
	struct space_cfi c;
	unw_dyn_info_t di;

	if (space_cfi(u->space, o, kind, &c) < 0 || ip < c.start_ip || ip >= c.end_ip)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_IP_OFFSET;
	di.start_ip = c.start_ip;
	di.end_ip = c.end_ip;
	di.load_offset = c.load_offset;
	di.u.rti.segbase = c.segbase;
	di.u.rti.table_data = c.table;
	di.u.rti.table_len = c.table_len;
	return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, u);
}

/*
 * Procedure info for ip: from its object's .eh_frame_hdr, else from a
 * table over its bare .eh_frame; where neither has the function (Go code,
 * whose CFI only .debug_frame holds, even in a binary whose C parts have
 * .eh_frame), from its .debug_frame.
 */
static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct unwinder *u = arg;
	struct space_obj *o;
	unw_dyn_info_t di;
	int r;

	if (unwind_spend(u) < 0)
		return -UNW_EINVAL; /* not ENOINFO: no frame-pointer guess either */
	if (!(o = space_find(u->space, ip))) {
		u->ev_noobj = 1;
		return -UNW_ENOINFO;
	}
	if (!o->eh_count) {
		r = search_cfi(u, as, ip, o, SPACE_CFI_EH_FRAME, pi, need_unwind_info);
		goto debug_frame;
	}
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
	r = _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
debug_frame:
	if (r == -UNW_ENOINFO)
		r = search_cfi(u, as, ip, o, SPACE_CFI_DEBUG_FRAME, pi, need_unwind_info);
	if (r == -UNW_ENOINFO)
		u->ev_noinfo = 1;
	return r;
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

int unwind_spend(struct unwinder *u)
{
	if (u->ev_budget || u->frame_calls >= UNWIND_FRAME_CALLS ||
	    u->stack_calls >= UNWIND_STACK_CALLS) {
		u->ev_budget = 1;
		return -1;
	}
	u->frame_calls++;
	u->stack_calls++;
	return 0;
}

/* The copied region holding the 8 bytes at addr, or -1. */
int unwind_region_of(const struct thread_image *t, uint64_t addr)
{
	const struct stack_region *r;
	unsigned i;

	for (i = 0; i < t->nstacks && i < IMAGE_MAX_REGIONS; i++) {
		r = &t->stack[i];
		if (addr >= r->addr && addr - r->addr <= r->len && r->len - (addr - r->addr) >= 8)
			return (int)i;
	}
	return -1;
}

/*
 * Stack words from the copied regions, anything else from the objects'
 * files. A failed read just past a region (within STACK_REACH of its
 * start; the nearest region below the address) means that copy was short.
 */
static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
		      void *arg)
{
	struct unwinder *u = arg;
	const struct thread_image *t = u->img;
	const struct stack_region *r;
	unsigned i;
	int k, near = -1;

	(void)as;
	if (write || !t)
		return -UNW_EREADONLYREG;
	if (unwind_spend(u) < 0)
		return -UNW_EINVAL;
	if ((k = unwind_region_of(t, addr)) >= 0) {
		r = &t->stack[k];
		memcpy(val, r->bytes + (addr - r->addr), sizeof(*val));
		if (addr - r->addr + sizeof(*val) > u->used[k])
			u->used[k] = addr - r->addr + sizeof(*val);
		return 0;
	}
	if (space_read(u->space, addr, val, sizeof(*val)) == 0)
		return 0;
	u->ev_mem = 1;
	for (i = 0; i < t->nstacks && i < IMAGE_MAX_REGIONS; i++)
		if (addr >= t->stack[i].addr &&
		    (near < 0 || t->stack[i].addr > t->stack[near].addr))
			near = (int)i;
	if (near >= 0 && addr - t->stack[near].addr < STACK_REACH)
		u->overran[near] = u->ev_copy = 1;
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
	if (unwind_spend(u) < 0)
		return -UNW_EINVAL;
	if (reg < 0 || reg >= DWARF_NREGS || !(r->valid & (1u << reg))) {
		if (!u->ev_reg)
			u->ev_reg = reg + 1;
		return -UNW_EBADREG;
	}
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

unw_accessors_t unwind_accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};
