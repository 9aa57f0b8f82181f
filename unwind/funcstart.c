/*
 * funcstart.c — binary search of an FDE table for the entry at or below
 * an address, then a look at that FDE's range. The .eh_frame_hdr table
 * holds (initial location, FDE) pairs as int32 offsets from the header;
 * cprof's own tables (space_cfi()) hold them relative to start_ip and
 * segbase, and are read at their synthetic addresses.
 */
#include <string.h>

#include "unwind/funcstart.h"
#include "unwind/space.h"

/* One table to search: entry i is (start rel, fde rel) at table + 8 * i. */
struct fdetab {
	uint64_t table, count;
	uint64_t start_base, fde_base; /* what the two int32 fields are relative to */
};

static int rd32(struct space *s, uint64_t addr, int32_t *v)
{
	return space_read(s, addr, v, sizeof(*v));
}

/*
 * Whether the FDE at fde covers addr, for the usual pc-relative sdata4
 * encoding (recognised by its initial location decoding to start); an
 * FDE in another encoding is believed.
 */
static int fde_covers(struct space *s, uint64_t fde, uint64_t start, uint64_t addr)
{
	int32_t len, pcrel, range;

	if (rd32(s, fde, &len) < 0 || len == -1 || len < 12)
		return 1; /* 64-bit DWARF or unreadable: no check */
	if (rd32(s, fde + 8, &pcrel) < 0 || fde + 8 + (uint64_t)(int64_t)pcrel != start)
		return 1; /* another encoding */
	if (rd32(s, fde + 12, &range) < 0 || range <= 0)
		return 1;
	return addr < start + (uint64_t)(uint32_t)range;
}

static int tab_find(struct space *s, const struct fdetab *t, uint64_t addr, uint64_t *start,
		    int check)
{
	uint64_t lo = 0, hi = t->count, mid;
	int32_t st, fd;

	/* The last entry whose start is <= addr. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (rd32(s, t->table + 8 * mid, &st) < 0)
			return -1;
		if (t->start_base + (uint64_t)(int64_t)st <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	if (rd32(s, t->table + 8 * (lo - 1), &st) < 0 || rd32(s, t->table + 8 * (lo - 1) + 4, &fd) < 0)
		return -1;
	*start = t->start_base + (uint64_t)(int64_t)st;
	if (check && !fde_covers(s, t->fde_base + (uint64_t)(int64_t)fd, *start, addr))
		return -1;
	return 0;
}

int funcstart_find(struct space *s, struct space_obj *o, uint64_t addr, uint64_t *start)
{
	struct space_cfi cfi;
	struct fdetab t;

	if (!o || !o->img)
		return -1;
	if (o->eh_count) {
		t.table = o->eh_table;
		t.count = o->eh_count;
		t.start_base = t.fde_base = o->eh_hdr;
		if (tab_find(s, &t, addr, start, 1) == 0)
			return 0;
	} else if (space_cfi(s, o, SPACE_CFI_EH_FRAME, &cfi) == 0) {
		t.table = cfi.table;
		t.count = cfi.table_len;
		t.start_base = cfi.start_ip;
		t.fde_base = cfi.segbase;
		if (addr < cfi.end_ip && tab_find(s, &t, addr, start, 1) == 0)
			return 0;
	}
	if (space_cfi(s, o, SPACE_CFI_DEBUG_FRAME, &cfi) == 0) {
		t.table = cfi.table;
		t.count = cfi.table_len;
		t.start_base = cfi.start_ip;
		t.fde_base = cfi.segbase;
		if (addr < cfi.end_ip && tab_find(s, &t, addr, start, 0) == 0)
			return 0;
	}
	return -1;
}
