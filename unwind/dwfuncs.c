/*
 * dwfuncs.c — per-unit tables of function ranges. A unit's DIE tree is
 * walked once, depth first with an explicit stack, descending only into
 * the DIEs that may hold function definitions; each DW_TAG_subprogram
 * with code adds its ranges (dwarf_ranges(): low/high pc or a range list,
 * so a function's .cold part is found too). Tables are kept by the unit
 * DIE's offset in a u64map.
 */
#include <dwarf.h>
#include <stdlib.h>

#include "common/array.h"
#include "common/u64map.h"
#include "unwind/dwfuncs.h"

#define UNITS_MAX (1u << 20)
#define WALK_BACK 64 /* entries looked at below an address for one that holds it */

struct fnrange {
	uint64_t lo, hi;
	Dwarf_Off die;
};

struct unit {
	struct fnrange *v;
	size_t n, cap;
};

struct dwfuncs {
	Dwarf *dw;
	struct u64map by_unit; /* unit DIE offset -> index in units + 1 */
	struct unit *units;
	size_t nunits, units_cap;
	size_t nranges; /* kept in all units, at most DWFUNCS_MAX_TOTAL */
};

struct dwfuncs *dwfuncs_new(Dwarf *dw)
{
	struct dwfuncs *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->dw = dw;
	u64map_init(&f->by_unit, UNITS_MAX);
	return f;
}

void dwfuncs_free(struct dwfuncs *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nunits; i++)
		free(f->units[i].v);
	free(f->units);
	u64map_release(&f->by_unit);
	free(f);
}

static int by_lo(const void *a, const void *b)
{
	const struct fnrange *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi > y->hi ? -1 : x->hi < y->hi; /* the wider first: the inner one wins */
}

static void add_ranges(struct dwfuncs *f, struct unit *u, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t it = 0;
	struct fnrange *v;

	while ((it = dwarf_ranges(die, it, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (f->nranges >= DWFUNCS_MAX_TOTAL)
			return;
		v = array_grow(u->v, &u->cap, u->n + 1, sizeof(*v), DWFUNCS_MAX_RANGES);
		if (!v)
			return;
		u->v = v;
		v[u->n].lo = lo;
		v[u->n].hi = hi;
		v[u->n++].die = dwarf_dieoffset(die);
		f->nranges++;
	}
}

/* Whether definitions may sit inside a DIE of this tag. */
static int holds_functions(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_module;
}

static void unit_build(struct dwfuncs *f, struct unit *u, Dwarf_Die *cu)
{
	Dwarf_Die stack[DWFUNCS_MAX_DEPTH], child;
	size_t depth = 0, visited = 0;

	if (dwarf_child(cu, &child) != 0)
		return;
	stack[depth++] = child;
	while (depth && visited++ < DWFUNCS_MAX_DIES) {
		Dwarf_Die *d = &stack[depth - 1];
		int tag = dwarf_tag(d);

		if (tag == DW_TAG_subprogram)
			add_ranges(f, u, d);
		if (holds_functions(tag) && depth < DWFUNCS_MAX_DEPTH && dwarf_child(d, &child) == 0) {
			/* Into it; its sibling is taken when its children are done. */
			stack[depth++] = child;
			continue;
		}
		/* To the next sibling, climbing out of finished DIEs. */
		while (depth && dwarf_siblingof(&stack[depth - 1], &stack[depth - 1]) != 0)
			depth--;
	}
	if (u->n)
		qsort(u->v, u->n, sizeof(*u->v), by_lo);
}

static struct unit *unit_of(struct dwfuncs *f, Dwarf_Die *cu)
{
	uint64_t off = dwarf_dieoffset(cu), v;
	struct unit *u;

	if (u64map_get(&f->by_unit, off, &v))
		return &f->units[v - 1];
	u = array_grow(f->units, &f->units_cap, f->nunits + 1, sizeof(*u), UNITS_MAX);
	if (!u)
		return NULL;
	f->units = u;
	u = &f->units[f->nunits];
	u->v = NULL;
	u->n = u->cap = 0;
	unit_build(f, u, cu);
	if (u64map_put(&f->by_unit, off, f->nunits + 1) < 0) {
		free(u->v);
		return NULL;
	}
	f->nunits++;
	return u;
}

int dwfuncs_find(struct dwfuncs *f, Dwarf_Die *cu, uint64_t vaddr, Dwarf_Die *fn)
{
	struct unit *u;
	size_t lo = 0, hi, mid, i, walk;

	if (!f || !(u = unit_of(f, cu)))
		return -1;
	hi = u->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (u->v[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo, walk = 0; i-- > 0 && walk < WALK_BACK; walk++)
		if (vaddr >= u->v[i].lo && vaddr < u->v[i].hi)
			return dwarf_offdie(f->dw, u->v[i].die, fn) ? 0 : -1;
	return -1;
}
