/*
 * cfitab.c — one pass over an .eh_frame or .debug_frame section: every CIE
 * is parsed where it stands and remembered by offset (sorted, since the
 * pass goes forward), every FDE finds its CIE by binary search, decodes its
 * initial location and range, and becomes a candidate entry; the candidates
 * are sorted once and made relative to the lowest start. For .debug_frame
 * the pass also writes the converted records. A reader (struct rd) never
 * moves past the end of its record: a read that would sets rd.bad, and the
 * record is skipped. What the tables hold is counted process-wide against
 * one cap (cfitab.h), atomically, since every capture's space builds them.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "common/buf.h"
#include "common/err.h"
#include "unwind/cfitab.h"
#include "unwind/elfimg.h"

#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define CFI_AUG_MAX 16 /* augmentation string bytes looked at */

/* Bytes all tables hold, the cap on them (0: CFITAB_MAX_TOTAL), whether it was noted. */
static size_t held_total, total_cap;
static int total_noted;

static size_t total_limit(void)
{
	size_t c = __atomic_load_n(&total_cap, __ATOMIC_RELAXED);

	return c ? c : CFITAB_MAX_TOTAL;
}

/* Bytes that may still be held. */
static size_t total_room(void)
{
	size_t cur = __atomic_load_n(&held_total, __ATOMIC_RELAXED), lim = total_limit();

	return cur < lim ? lim - cur : 0;
}

/* Count n more bytes held; 0, or -1 (noted once) when the cap would pass. */
static int total_hold(size_t n)
{
	size_t cur = __atomic_load_n(&held_total, __ATOMIC_RELAXED), lim = total_limit();

	do {
		if (cur > lim || n > lim - cur) {
			if (!__atomic_exchange_n(&total_noted, 1, __ATOMIC_RELAXED))
				note("the CFI tables built for objects without .eh_frame_hdr reached "
				     "their cap of %zu MiB in all; further objects' frames stay partial",
				     lim >> 20);
			return -1;
		}
	} while (!__atomic_compare_exchange_n(&held_total, &cur, cur + n, 0, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return 0;
}

static void total_release(size_t n)
{
	__atomic_fetch_sub(&held_total, n, __ATOMIC_RELAXED);
}

size_t cfitab_held(void)
{
	return __atomic_load_n(&held_total, __ATOMIC_RELAXED);
}

void cfitab_limit_total(size_t bytes)
{
	__atomic_store_n(&total_cap, bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&total_noted, 0, __ATOMIC_RELAXED);
}

/* A bounded reader over sec[pos..end). */
struct rd {
	const unsigned char *sec;
	size_t pos, end;
	int bad;
};

static uint64_t rd_fixed(struct rd *r, size_t n)
{
	uint64_t v = 0;

	if (r->bad || r->end - r->pos < n) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->sec + r->pos, n); /* little-endian host and file */
	r->pos += n;
	return v;
}

/* A LEB128 number; *last gets its last byte (the sign bit of a signed one). */
static uint64_t rd_leb(struct rd *r, unsigned *shift_out, unsigned char *last)
{
	uint64_t v = 0;
	unsigned shift = 0;
	unsigned char b;

	do {
		if (r->bad || r->pos >= r->end) {
			r->bad = 1;
			*shift_out = 0;
			*last = 0;
			return 0;
		}
		b = r->sec[r->pos++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*shift_out = shift;
	*last = b;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	unsigned shift;
	unsigned char b;

	return rd_leb(r, &shift, &b);
}

static int64_t rd_sleb(struct rd *r)
{
	unsigned shift;
	unsigned char b;
	uint64_t v = rd_leb(r, &shift, &b);

	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/*
 * A pointer in encoding enc at the reader's position, as an ELF vaddr
 * (sec_vaddr is where the section is). Absolute and pc-relative only: the
 * other applications need bases a static table cannot know. 0 or -1.
 */
static int rd_pointer(struct rd *r, unsigned enc, uint64_t sec_vaddr, uint64_t *out)
{
	uint64_t field = sec_vaddr + r->pos, v;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8: v = rd_fixed(r, 8); break;
	case DW_EH_PE_udata4: v = rd_fixed(r, 4); break;
	case DW_EH_PE_sdata4: v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4); break;
	case DW_EH_PE_udata2: v = rd_fixed(r, 2); break;
	case DW_EH_PE_sdata2: v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2); break;
	case DW_EH_PE_uleb128: v = rd_uleb(r); break;
	case DW_EH_PE_sleb128: v = (uint64_t)rd_sleb(r); break;
	default: return -1;
	}
	if (r->bad)
		return -1;
	switch (enc & 0xf0) {
	case 0: break;
	case DW_EH_PE_pcrel: v += field; break;
	default: return -1; /* datarel, textrel, funcrel, aligned, indirect */
	}
	*out = v;
	return 0;
}

/* A CIE as the FDEs need it. */
struct cie {
	size_t off;             /* where its record starts in the section */
	unsigned enc;           /* .eh_frame: the FDE pointer encoding */
	size_t out_off;         /* .debug_frame: where its conversion starts */
};

/* A candidate entry before sorting. */
struct cand {
	uint64_t start, end;
	uint32_t fde;
};

/* State of one pass. */
struct pass {
	const unsigned char *sec;
	size_t len;
	uint64_t vaddr;
	int debug;
	struct cie *cies;
	size_t ncies;
	struct buf cand; /* struct cand[] */
	struct buf out;  /* .debug_frame converted */
	size_t skipped;
};

static const struct cie *cie_find(const struct pass *p, size_t off)
{
	size_t lo = 0, hi = p->ncies, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (p->cies[mid].off == off)
			return &p->cies[mid];
		if (p->cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int put_uleb(struct buf *b, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;

	do {
		t[n] = v & 0x7f;
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	return buf_append(b, t, n);
}

static int put_sleb(struct buf *b, int64_t v)
{
	unsigned char t[10];
	size_t n = 0;
	int more;

	do {
		t[n] = v & 0x7f;
		v >>= 7; /* arithmetic on gcc and clang */
		more = !((v == 0 && !(t[n] & 0x40)) || (v == -1 && (t[n] & 0x40)));
		if (more)
			t[n] |= 0x80;
		n++;
	} while (more && n < sizeof(t));
	return buf_append(b, t, n);
}

/* Patch the 32-bit length of the record written from out offset at. */
static void patch_len(struct buf *b, size_t at)
{
	uint32_t l = (uint32_t)(b->len - at - 4);

	memcpy(b->data + at, &l, 4);
}

/*
 * Parse the CIE whose body (after its id) r covers; rec is its record's
 * offset. Remembered, and for .debug_frame converted. 0 or -1.
 */
static int cie_add(struct pass *p, struct rd *r, size_t rec)
{
	struct cie c = { .off = rec, .enc = DW_EH_PE_absptr };
	char aug[CFI_AUG_MAX];
	uint64_t code_align, ra, auglen;
	int64_t data_align;
	size_t n = 0, augend;
	unsigned version;
	struct cie *v;
	unsigned char ch;

	if (p->ncies >= CFITAB_MAX_CIES)
		return -1;
	version = (unsigned)rd_fixed(r, 1);
	if (version != 1 && version != 3 && !(p->debug && version == 4))
		return -1;
	do {
		ch = (unsigned char)rd_fixed(r, 1);
		if (r->bad || n == sizeof(aug))
			return -1;
		aug[n++] = (char)ch;
	} while (ch);
	if (version == 4 && (rd_fixed(r, 1) != 8 || rd_fixed(r, 1) != 0))
		return -1; /* address size 8, no segment selector */
	code_align = rd_uleb(r);
	data_align = rd_sleb(r);
	ra = version == 1 ? rd_fixed(r, 1) : rd_uleb(r);
	if (r->bad)
		return -1;
	if (p->debug) {
		if (aug[0])
			return -1; /* GCC and Go write ""; other augmentations are for .eh_frame */
		c.out_off = p->out.len;
		if (buf_append(&p->out, "\0\0\0\0\0\0\0\0\3\0", 10) < 0 ||
		    put_uleb(&p->out, code_align) < 0 || put_sleb(&p->out, data_align) < 0 ||
		    put_uleb(&p->out, ra) < 0 ||
		    buf_append(&p->out, p->sec + r->pos, r->end - r->pos) < 0)
			return -1;
		patch_len(&p->out, c.out_off);
	} else if (aug[0] == 'z') {
		auglen = rd_uleb(r);
		if (r->bad || auglen > r->end - r->pos)
			return -1;
		augend = r->pos + (size_t)auglen;
		for (n = 1; aug[n] && aug[n] != 'R'; n++) {
			uint64_t ignored;

			if (aug[n] == 'L')
				(void)rd_fixed(r, 1);
			else if (aug[n] == 'P') {
				if (rd_pointer(r, (unsigned)rd_fixed(r, 1) & 0x0f, 0, &ignored) < 0)
					return -1;
			} else if (aug[n] != 'S')
				return -1; /* an unknown letter before 'R': its data's size is unknown */
			if (r->bad || r->pos > augend)
				return -1;
		}
		if (aug[n] == 'R')
			c.enc = (unsigned)rd_fixed(r, 1);
		if (r->bad || r->pos > augend)
			return -1;
	} else if (aug[0]) {
		return -1;
	}
	if (p->ncies % 64 == 0) {
		v = realloc(p->cies, (p->ncies + 64) * sizeof(*v));
		if (!v)
			return -1;
		p->cies = v;
	}
	p->cies[p->ncies++] = c;
	return 0;
}

/* An FDE whose body after its CIE pointer r covers; rec its record's offset. */
static int fde_add(struct pass *p, struct rd *r, size_t rec, const struct cie *c)
{
	struct cand k;
	uint64_t start, range;
	size_t at;

	if (p->cand.len / sizeof(k) >= CFITAB_MAX_FDES)
		return -1;
	if (p->debug) {
		start = rd_fixed(r, 8);
		range = rd_fixed(r, 8);
	} else if (rd_pointer(r, c->enc, p->vaddr, &start) < 0 ||
		   rd_pointer(r, c->enc & 0x0f, 0, &range) < 0) {
		return -1;
	}
	if (r->bad || range == 0 || start + range < start)
		return -1;
	k.start = start;
	k.end = start + range;
	k.fde = (uint32_t)rec;
	if (p->debug) {
		uint32_t cieptr;

		at = p->out.len;
		if (at > INT32_MAX)
			return -1;
		k.fde = (uint32_t)at;
		cieptr = (uint32_t)(at + 4 - c->out_off);
		if (buf_append(&p->out, "\0\0\0\0", 4) < 0 || buf_append(&p->out, &cieptr, 4) < 0 ||
		    buf_append(&p->out, &start, 8) < 0 || buf_append(&p->out, &range, 8) < 0 ||
		    buf_append(&p->out, p->sec + r->pos, r->end - r->pos) < 0)
			return -1;
		patch_len(&p->out, at);
	}
	return buf_append(&p->cand, &k, sizeof(k));
}

/* Walk every record of the section. */
static void pass_run(struct pass *p)
{
	size_t pos = 0, rec, idpos;
	uint64_t len, id;
	const struct cie *c;
	struct rd r;
	int is64, ok;

	while (p->len - pos >= 4) {
		rec = pos;
		r = (struct rd){ .sec = p->sec, .pos = pos, .end = p->len };
		len = rd_fixed(&r, 4);
		is64 = len == 0xffffffffu;
		if (is64)
			len = rd_fixed(&r, 8);
		if (r.bad || (!is64 && len >= 0xfffffff0u) || len > p->len - r.pos)
			return; /* cannot find the next record: stop here */
		if (len == 0) {
			if (!p->debug)
				return; /* .eh_frame's terminator */
			pos = r.pos;
			continue;
		}
		r.end = r.pos + (size_t)len;
		pos = r.end;
		idpos = r.pos;
		id = rd_fixed(&r, is64 ? 8 : 4);
		if (r.bad) {
			p->skipped++;
			continue;
		}
		if (p->debug ? id == (is64 ? ~(uint64_t)0 : 0xffffffffu) : id == 0) {
			ok = cie_add(p, &r, rec) == 0;
		} else {
			if (!p->debug && id > idpos) {
				p->skipped++;
				continue;
			}
			c = cie_find(p, p->debug ? (size_t)id : idpos - (size_t)id);
			if (p->debug && id >= p->len)
				c = NULL;
			ok = c && fde_add(p, &r, rec, c) == 0;
		}
		if (!ok)
			p->skipped++;
	}
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->fde < y->fde ? -1 : x->fde > y->fde;
}

/* Sort the candidates into t's entries. 0, or -1 when none. */
static int pass_finish(struct pass *p, struct cfitab *t)
{
	struct cand *k = (struct cand *)p->cand.data;
	size_t n = p->cand.len / sizeof(*k), i;

	if (n == 0)
		return -1;
	qsort(k, n, sizeof(*k), cand_cmp);
	t->ent = calloc(n, sizeof(*t->ent));
	if (!t->ent)
		return -1;
	t->base = k[0].start;
	t->end = 0;
	for (i = 0; i < n; i++) {
		if (k[i].start - t->base > INT32_MAX || k[i].fde > INT32_MAX) {
			p->skipped++; /* past what an int32 table reaches */
			continue;
		}
		if (t->n && (uint64_t)t->ent[t->n - 1].start == k[i].start - t->base)
			continue; /* the same start twice: the first wins */
		t->ent[t->n].start = (int32_t)(k[i].start - t->base);
		t->ent[t->n].fde = (int32_t)k[i].fde;
		t->n++;
		if (k[i].end > t->end)
			t->end = k[i].end;
	}
	t->skipped = p->skipped;
	return 0;
}

static int build(struct cfitab *t, const unsigned char *sec, size_t len, uint64_t vaddr,
		 int debug)
{
	struct pass p = { .sec = sec, .len = len, .vaddr = vaddr, .debug = debug };
	size_t room = total_room();

	cfitab_release(t);
	t->kind = debug ? CFITAB_DEBUG_FRAME : CFITAB_EH_FRAME;
	t->frame_vaddr = vaddr;
	buf_init(&p.cand, (size_t)CFITAB_MAX_FDES * sizeof(struct cand));
	/* The converted copy is kept: never more than the total cap has room for. */
	buf_init(&p.out, room < CFITAB_MAX_SECTION ? room : CFITAB_MAX_SECTION);
	if (len > CFITAB_MAX_SECTION)
		goto err;
	pass_run(&p);
	if (pass_finish(&p, t) < 0)
		goto err;
	if (debug) {
		t->frame = p.out.data;
		t->frame_len = p.out.len;
		p.out.data = NULL;
	}
	if (total_hold(t->n * sizeof(*t->ent) + t->frame_len) < 0)
		goto err;
	t->held = t->n * sizeof(*t->ent) + t->frame_len;
	buf_release(&p.cand);
	buf_release(&p.out);
	free(p.cies);
	return 0;
err:
	buf_release(&p.cand);
	buf_release(&p.out);
	free(p.cies);
	cfitab_release(t);
	return -1;
}

void cfitab_init(struct cfitab *t)
{
	memset(t, 0, sizeof(*t));
}

void cfitab_release(struct cfitab *t)
{
	total_release(t->held);
	free(t->ent);
	free(t->frame);
	cfitab_init(t);
}

int cfitab_build_eh_frame(struct cfitab *t, const unsigned char *sec, size_t len, uint64_t vaddr)
{
	return build(t, sec, len, vaddr, 0);
}

int cfitab_build_debug_frame(struct cfitab *t, const unsigned char *sec, size_t len)
{
	return build(t, sec, len, 0, 1);
}

int cfitab_load(struct cfitab *t, const struct elf_image *img, enum cfitab_kind kind)
{
	const unsigned char *sec;
	unsigned char *plain = NULL;
	Elf64_Chdr ch;
	uint64_t vaddr;
	uLongf n;
	size_t len;
	int compressed, r;

	cfitab_release(t);
	if (elf_image_section(img, kind == CFITAB_EH_FRAME ? ".eh_frame" : ".debug_frame", &sec,
			      &len, &vaddr, &compressed) < 0)
		return -1;
	if (kind == CFITAB_EH_FRAME)
		return compressed || !vaddr ? -1 : cfitab_build_eh_frame(t, sec, len, vaddr);
	if (compressed) {
		if (len < sizeof(ch))
			return -1;
		memcpy(&ch, sec, sizeof(ch));
		/* The inflated bytes count against the total while the table is built. */
		if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size == 0 ||
		    ch.ch_size > CFITAB_MAX_SECTION || total_hold((size_t)ch.ch_size) < 0)
			return -1;
		if (!(plain = malloc(ch.ch_size))) {
			total_release((size_t)ch.ch_size);
			return -1;
		}
		n = (uLongf)ch.ch_size;
		if (uncompress(plain, &n, sec + sizeof(ch), (uLong)(len - sizeof(ch))) != Z_OK ||
		    n != ch.ch_size) {
			free(plain);
			total_release((size_t)ch.ch_size);
			return -1;
		}
		sec = plain;
		len = n;
	}
	r = cfitab_build_debug_frame(t, sec, len);
	if (plain) {
		free(plain);
		total_release(len);
	}
	return r;
}

long cfitab_find(const struct cfitab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n, mid;
	uint64_t rel;

	if (t->n == 0 || addr < t->base || addr >= t->end || addr - t->base > INT32_MAX)
		return -1;
	rel = addr - t->base;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((uint64_t)t->ent[mid].start <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (long)lo - 1 : -1;
}
