/*
 * linetab.c — one object's resolved lines, in memory and as a file.
 * Entries are appended and found through a u64map by address; their
 * frames sit in one array; strings are interned (FNV-1a of the bytes,
 * checked with strcmp) into chunks that never move, so a lookup's
 * pointers stay valid while the table grows. A file is checked whole
 * before anything is taken from it: one pass over each table, and one
 * over the strings for the longest run between NULs (so that no string
 * is ever scanned twice, whatever offsets a hostile file holds). Writing
 * sorts a copy of the entries and gives each distinct string one offset.
 */
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/buf.h"
#include "common/fnv.h"
#include "common/u64map.h"
#include "unwind/linetab.h"

#define MAGIC "CPRFLINE"
#define CHUNK (64u << 10) /* bytes of strings per allocation */

struct entry {
	uint64_t vaddr;
	uint32_t first, n;
};

struct chunk {
	struct chunk *next;
	size_t used, cap;
	char s[];
};

struct linetab {
	char build_id[LINETAB_MAX_BUILD_ID + 1];
	struct entry *ent;
	size_t nent, ent_cap;
	struct u64map by_addr; /* vaddr -> index in ent */
	struct dwlines_frame *fr;
	size_t nfr, fr_cap;
	struct u64map strs; /* FNV-1a of a string -> its interned copy */
	struct chunk *chunks;
	size_t str_bytes; /* interned bytes, NULs included */
};

/* The fields of a file that passed the checks. */
struct layout {
	uint32_t ne, nf, ns;
	const unsigned char *ent, *fr;
	const char *str;
};

int linetab_key_ok(const char *id)
{
	size_t n = id ? strnlen(id, LINETAB_MAX_BUILD_ID + 1) : 0;
	size_t i;

	if (n < 2 || n > LINETAB_MAX_BUILD_ID || id[0] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f') ||
		      id[i] == '-'))
			return 0;
	return 1;
}

struct linetab *linetab_new(const char *build_id)
{
	struct linetab *t;

	if (!linetab_key_ok(build_id) || !(t = calloc(1, sizeof(*t))))
		return NULL;
	memcpy(t->build_id, build_id, strlen(build_id) + 1);
	u64map_init(&t->by_addr, LINETAB_MAX_ENTRIES);
	u64map_init(&t->strs, 2 * LINETAB_MAX_FRAMES);
	return t;
}

void linetab_free(struct linetab *t)
{
	struct chunk *c, *n;

	if (!t)
		return;
	for (c = t->chunks; c; c = n) {
		n = c->next;
		free(c);
	}
	u64map_release(&t->by_addr);
	u64map_release(&t->strs);
	free(t->ent);
	free(t->fr);
	free(t);
}

const char *linetab_build_id(const struct linetab *t)
{
	return t->build_id;
}

size_t linetab_count(const struct linetab *t)
{
	return t ? t->nent : 0;
}

int linetab_get(const struct linetab *t, uint64_t vaddr, struct dwlines_frame *out, size_t max,
		size_t *n)
{
	const struct entry *e;
	uint64_t i;

	*n = 0;
	if (!t || !u64map_get(&t->by_addr, vaddr, &i))
		return 0;
	e = &t->ent[i];
	*n = e->n < max ? e->n : max;
	if (*n) /* an entry without frames ("no lines here") may have no frame array */
		memcpy(out, t->fr + e->first, *n * sizeof(*out));
	return 1;
}

/* s's interned copy, NULL past the cap or out of memory. */
static const char *intern(struct linetab *t, const char *s)
{
	size_t len = strnlen(s, DWLINES_MAX_NAME);
	uint64_t h, v;
	struct chunk *c;
	char *p;

	if (len >= DWLINES_MAX_NAME || t->str_bytes + len + 1 > LINETAB_MAX_STRINGS)
		return NULL;
	h = fnv_bytes(FNV_OFFSET, s, len);
	if (u64map_get(&t->strs, h, &v) && !strcmp((const char *)(uintptr_t)v, s))
		return (const char *)(uintptr_t)v;
	c = t->chunks;
	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > CHUNK ? len + 1 : CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = t->chunks;
		t->chunks = c;
	}
	p = c->s + c->used;
	memcpy(p, s, len + 1);
	c->used += len + 1;
	t->str_bytes += len + 1;
	if (!u64map_get(&t->strs, h, &v))
		u64map_put(&t->strs, h, (uint64_t)(uintptr_t)p); /* a full map only loses sharing */
	return p;
}

int linetab_put(struct linetab *t, uint64_t vaddr, const struct dwlines_frame *f, size_t n)
{
	struct dwlines_frame *fr;
	struct entry *e;
	uint64_t v;
	size_t i;

	if (!t || n > DWLINES_MAX_FRAMES)
		return -1;
	if (u64map_get(&t->by_addr, vaddr, &v))
		return 1;
	if (t->nent >= LINETAB_MAX_ENTRIES || t->nfr + n > LINETAB_MAX_FRAMES)
		return -1;
	for (i = 0; i < n; i++)
		if (!f[i].name || !f[i].file || f[i].start_line < 0 || f[i].start_line > INT32_MAX ||
		    f[i].line < 0 || f[i].line > INT32_MAX)
			return -1;
	fr = array_grow(t->fr, &t->fr_cap, t->nfr + n + 1, sizeof(*fr), LINETAB_MAX_FRAMES + 1);
	if (!fr)
		return -1;
	t->fr = fr;
	e = array_grow(t->ent, &t->ent_cap, t->nent + 1, sizeof(*e), LINETAB_MAX_ENTRIES);
	if (!e)
		return -1;
	t->ent = e;
	for (i = 0; i < n; i++) {
		fr[t->nfr + i] = f[i];
		fr[t->nfr + i].name = intern(t, f[i].name);
		fr[t->nfr + i].file = intern(t, f[i].file);
		if (!fr[t->nfr + i].name || !fr[t->nfr + i].file)
			return -1;
	}
	if (u64map_put(&t->by_addr, vaddr, t->nent) < 0)
		return -1;
	e[t->nent].vaddr = vaddr;
	e[t->nent].first = (uint32_t)t->nfr;
	e[t->nent].n = (uint32_t)n;
	t->nent++;
	t->nfr += n;
	return 0;
}

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Whether offset off names a string of the checked strings. */
static int str_ok(const struct layout *l, uint32_t off)
{
	return off < l->ns;
}

/* Check p[0..len) as a file of t's; fill *l. 0 or -1. */
static int check(const struct linetab *t, const unsigned char *p, size_t len, struct layout *l)
{
	size_t bid = strlen(t->build_id), i, run = 0;
	uint64_t need, prev = 0;

	if (!p || len < LINETAB_HEADER || len > LINETAB_MAX_BYTES || memcmp(p, MAGIC, 8) ||
	    rd32(p + 8) != LINETAB_VERSION || rd32(p + 12) != bid || rd32(p + 28) != 0)
		return -1;
	l->ne = rd32(p + 16);
	l->nf = rd32(p + 20);
	l->ns = rd32(p + 24);
	if (l->ne > LINETAB_MAX_ENTRIES || l->nf > LINETAB_MAX_FRAMES || l->ns > LINETAB_MAX_STRINGS)
		return -1;
	need = LINETAB_HEADER + (uint64_t)bid + 16ull * l->ne + 16ull * l->nf + l->ns;
	if (need != len || memcmp(p + LINETAB_HEADER, t->build_id, bid) ||
	    fnv_bytes(FNV_OFFSET, p + LINETAB_HEADER, len - LINETAB_HEADER) != rd64(p + 32))
		return -1;
	l->ent = p + LINETAB_HEADER + bid;
	l->fr = l->ent + 16ull * l->ne;
	l->str = (const char *)(l->fr + 16ull * l->nf);
	/* Every string ends inside the table, none as long as DWLINES_MAX_NAME. */
	if (l->ns && l->str[l->ns - 1])
		return -1;
	for (i = 0; i < l->ns; i++) {
		run = l->str[i] ? run + 1 : 0;
		if (run >= DWLINES_MAX_NAME)
			return -1;
	}
	for (i = 0; i < l->ne; i++) {
		const unsigned char *e = l->ent + 16 * i;
		uint64_t va = rd64(e);

		if ((i && va <= prev) || rd32(e + 12) > DWLINES_MAX_FRAMES ||
		    (uint64_t)rd32(e + 8) + rd32(e + 12) > l->nf)
			return -1;
		prev = va;
	}
	for (i = 0; i < l->nf; i++) {
		const unsigned char *f = l->fr + 16 * i;

		if (!str_ok(l, rd32(f)) || !str_ok(l, rd32(f + 4)) || rd32(f + 8) > INT32_MAX ||
		    rd32(f + 12) > INT32_MAX)
			return -1;
	}
	return 0;
}

int linetab_merge(struct linetab *t, const void *data, size_t len, size_t *added)
{
	struct dwlines_frame f[DWLINES_MAX_FRAMES];
	struct layout l;
	uint32_t i, k, first, n;
	uint64_t v;

	*added = 0;
	if (!t || check(t, data, len, &l) < 0)
		return -1;
	for (i = 0; i < l.ne; i++) {
		const unsigned char *e = l.ent + 16ull * i;

		if (u64map_get(&t->by_addr, rd64(e), &v))
			continue;
		first = rd32(e + 8);
		n = rd32(e + 12);
		for (k = 0; k < n; k++) {
			const unsigned char *fp = l.fr + 16ull * (first + k);

			f[k].name = l.str + rd32(fp);
			f[k].file = l.str + rd32(fp + 4);
			f[k].start_line = rd32(fp + 8);
			f[k].line = rd32(fp + 12);
		}
		if (linetab_put(t, rd64(e), f, n) < 0)
			break; /* a cap: keep what fits */
		(*added)++;
	}
	return 0;
}

static void wr32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static void wr64(unsigned char *p, uint64_t v)
{
	wr32(p, (uint32_t)v);
	wr32(p + 4, (uint32_t)(v >> 32));
}

static int by_vaddr(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* The offset of interned string s in strs, appending it on first sight. */
static int str_offset(struct u64map *seen, struct buf *strs, const char *s, uint32_t *off)
{
	uint64_t v;

	if (u64map_get(seen, (uint64_t)(uintptr_t)s, &v)) {
		*off = (uint32_t)v;
		return 0;
	}
	*off = (uint32_t)strs->len;
	if (buf_append(strs, s, strlen(s) + 1) < 0)
		return -1;
	return u64map_put(seen, (uint64_t)(uintptr_t)s, *off);
}

int linetab_write(const struct linetab *t, struct buf *b)
{
	struct entry *sorted = NULL;
	struct buf body, strs;
	struct u64map seen;
	unsigned char h[LINETAB_HEADER], rec[16];
	uint32_t nf = 0, name, file;
	size_t i, k, bid = strlen(t->build_id);
	int r = -1;

	buf_init(&body, LINETAB_MAX_BYTES);
	buf_init(&strs, LINETAB_MAX_STRINGS);
	u64map_init(&seen, LINETAB_MAX_FRAMES * 2);
	if (t->nent && !(sorted = malloc(t->nent * sizeof(*sorted))))
		goto out;
	if (t->nent) {
		/* Not with NULL and 0: qsort's and memcpy's pointers are nonnull. */
		memcpy(sorted, t->ent, t->nent * sizeof(*sorted));
		qsort(sorted, t->nent, sizeof(*sorted), by_vaddr);
	}
	if (buf_append(&body, t->build_id, bid) < 0)
		goto out;
	for (i = 0; i < t->nent; i++) {
		wr64(rec, sorted[i].vaddr);
		wr32(rec + 8, nf);
		wr32(rec + 12, sorted[i].n);
		nf += sorted[i].n;
		if (buf_append(&body, rec, 16) < 0)
			goto out;
	}
	for (i = 0; i < t->nent; i++) {
		for (k = 0; k < sorted[i].n; k++) {
			const struct dwlines_frame *f = &t->fr[sorted[i].first + k];

			if (str_offset(&seen, &strs, f->name, &name) < 0 ||
			    str_offset(&seen, &strs, f->file, &file) < 0)
				goto out;
			wr32(rec, name);
			wr32(rec + 4, file);
			wr32(rec + 8, (uint32_t)f->start_line);
			wr32(rec + 12, (uint32_t)f->line);
			if (buf_append(&body, rec, 16) < 0)
				goto out;
		}
	}
	if (strs.len && buf_append(&body, strs.data, strs.len) < 0)
		goto out;
	memcpy(h, MAGIC, 8);
	wr32(h + 8, LINETAB_VERSION);
	wr32(h + 12, (uint32_t)bid);
	wr32(h + 16, (uint32_t)t->nent);
	wr32(h + 20, nf);
	wr32(h + 24, (uint32_t)strs.len);
	wr32(h + 28, 0);
	wr64(h + 32, fnv_bytes(FNV_OFFSET, body.data, body.len));
	if (buf_append(b, h, sizeof(h)) < 0 || buf_append(b, body.data, body.len) < 0)
		goto out;
	r = 0;
out:
	free(sorted);
	buf_release(&body);
	buf_release(&strs);
	u64map_release(&seen);
	return r;
}
