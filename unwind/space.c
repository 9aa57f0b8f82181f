/*
 * space.c — the target's objects and where they are loaded. The maps are
 * parsed into ranges (address interval -> object instance); an instance is
 * one load of one file (the same library loaded twice is two instances with
 * two biases), while the ELF image of a file is opened once and shared.
 * Lookups are a binary search over the ranges with a one-entry cache in
 * front, because the unwinder asks for neighbouring addresses in runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/array.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/troot.h"
#include "common/vmread.h"
#include "unwind/cfitab.h"
#include "unwind/debugfind.h"
#include "unwind/elfimg.h"
#include "unwind/maps.h"
#include "unwind/minidebug.h"
#include "unwind/space.h"

#define SPACE_MAX_OBJS 65536
#define VDSO_MAX (1u << 20)

/* An opened file, shared by every instance of it. */
struct image {
	uint64_t dev, inode;
	char *path;
	struct elf_image *img;   /* NULL when unreadable */
	struct elf_image *debug; /* separate debug file with .symtab, or NULL */
	struct elf_image *mini;  /* MiniDebugInfo (.gnu_debugdata), loaded on a miss */
	int mini_state;          /* 0 not tried, 1 loaded, -1 none */
	struct cfitab cfi[2];    /* by SPACE_CFI_* */
	int cfi_state[2];        /* 0 not tried, 1 built, -1 none */
	size_t index;            /* in struct space's images */
};

struct range {
	uint64_t start, end;
	struct space_obj *obj;
};

struct space {
	pid_t pid;
	uint64_t exe_dev, exe_inode;
	uint64_t last_refresh;
	struct image **images;
	size_t nimages, images_cap;
	struct space_obj **objs;
	size_t nobjs, objs_cap;
	struct range *ranges;
	size_t nranges;
	size_t hint; /* index of the last range hit */
};

static uint64_t entry_dev(const struct map_entry *e)
{
	return (uint64_t)e->dev_major << 32 | e->dev_minor;
}

/*
 * Open the file a mapping of the target maps, read-only: through
 * /proc/PID/map_files first (the target itself holds that mapping: the
 * very file, even deleted), else by its path inside the target's root
 * with the target's credentials (common/troot.h), never on the host. Only
 * a regular file whose inode is still the mapped one.
 */
static int open_in_target(struct space *s, const struct map_entry *e)
{
	char p[96];
	const char *why = NULL;
	struct stat st;
	int fd, mf;

	snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", (int)s->pid,
		 (unsigned long long)e->start, (unsigned long long)e->end);
	mf = open(p, O_PATH | O_CLOEXEC); /* needs CAP_SYS_ADMIN */
	if (mf >= 0) {
		fd = troot_reopen(mf, &why);
		close(mf);
	} else {
		fd = troot_open(s->pid, troot_target_path(s->pid, e->path), 0, &why);
	}
	if (fd < 0) {
		if (why && troot_first_time(e->path))
			note("%s of process %d is %s: not read, its frames stay unnamed",
			     e->path, (int)s->pid, why);
		return -1;
	}
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != e->inode) {
		close(fd); /* replaced on disk: its symbols would lie */
		return -1;
	}
	return fd;
}

/*
 * A separate debug file (unwind/debugfind.h: by build ID, then by debug
 * link), as Debian's -dbgsym packages install them: it has the .symtab
 * that stripped objects lack.
 */
static struct elf_image *open_debug(struct space *s, const char *path, const struct elf_image *img)
{
	struct elf_image *dbg = NULL;
	enum debug_how how;
	int fd = debugfind_open(s->pid, path, elf_image_build_id(img), img, &how);

	if (fd >= 0) {
		dbg = elf_image_open(fd);
		close(fd);
	}
	return dbg;
}

/* The vDSO has no file: copy it out of the target (a few KiB, once). */
static struct elf_image *read_vdso(struct space *s, const struct map_entry *e)
{
	struct elf_image *img = NULL;
	size_t len = e->end - e->start;
	void *buf;

	if (len == 0 || len > VDSO_MAX || !(buf = malloc(len)))
		return NULL;
	if (vm_read(s->pid, e->start, buf, len) == 0)
		img = elf_image_from_mem(buf, len);
	free(buf);
	return img;
}

static struct image *image_get(struct space *s, const struct map_entry *e, int is_vdso)
{
	struct image *im, **v;
	size_t i;
	int fd;

	for (i = 0; i < s->nimages; i++) {
		im = s->images[i];
		if (im->dev == entry_dev(e) && im->inode == e->inode && !strcmp(im->path, e->path))
			return im;
	}
	v = array_grow(s->images, &s->images_cap, s->nimages + 1, sizeof(*v), SPACE_MAX_OBJS);
	if (!v)
		return NULL;
	s->images = v;
	im = calloc(1, sizeof(*im));
	if (!im)
		return NULL;
	im->path = strdup(e->path);
	if (!im->path) {
		free(im);
		return NULL;
	}
	im->dev = entry_dev(e);
	im->inode = e->inode;
	cfitab_init(&im->cfi[0]);
	cfitab_init(&im->cfi[1]);
	if (is_vdso) {
		im->img = read_vdso(s, e);
	} else if ((fd = open_in_target(s, e)) >= 0) {
		im->img = elf_image_open(fd);
		close(fd);
	}
	if (im->img && !is_vdso)
		im->debug = open_debug(s, e->path, im->img);
	im->index = s->nimages;
	s->images[s->nimages++] = im;
	return im;
}

/* Read .eh_frame_hdr's header; only the encodings every linker emits. */
static void obj_load_eh(struct space_obj *o)
{
	const unsigned char *h;
	uint64_t vaddr, size;
	uint32_t count;

	if (!o->img || elf_image_eh_frame_hdr(o->img, &vaddr, &size) < 0 || size < 12)
		return;
	h = elf_image_ptr(o->img, vaddr, 12);
	/* version 1; fde_count udata4; table datarel|sdata4 */
	if (!h || h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b)
		return;
	if ((h[1] & 0x0f) != 0x0b && (h[1] & 0x0f) != 0x03)
		return; /* eh_frame_ptr must be 4 bytes wide */
	memcpy(&count, h + 8, 4);
	if ((uint64_t)count * 8 > size - 12)
		return;
	o->eh_hdr = vaddr + o->bias;
	o->eh_table = o->eh_hdr + 12;
	o->eh_count = count;
}

/* The load bias from the instance's lowest mapping and the segment it maps. */
static void obj_set_bias(struct space_obj *o, const struct map_entry *first)
{
	const struct elf_segment *seg;
	size_t i, n;

	o->bias = first->start - first->offset;
	if (!o->img)
		return;
	seg = elf_image_segments(o->img, &n);
	for (i = 0; i < n; i++) {
		if (seg[i].offset >= first->offset && seg[i].offset - first->offset < 0x10000) {
			o->bias = first->start - seg[i].vaddr + (seg[i].offset - first->offset);
			return;
		}
	}
}

static struct space_obj *obj_get(struct space *s, const struct map_entry *first, int is_vdso)
{
	struct space_obj *o, **v;
	struct image *im;
	uint64_t base = first->start - first->offset;
	size_t i;

	for (i = 0; i < s->nobjs; i++) {
		o = s->objs[i];
		if (o->base == base && o->inode == first->inode && o->dev == entry_dev(first) &&
		    !strcmp(o->path, first->path))
			return o;
	}
	if (s->nobjs >= SPACE_MAX_OBJS)
		return NULL;
	im = image_get(s, first, is_vdso);
	if (!im)
		return NULL;
	v = array_grow(s->objs, &s->objs_cap, s->nobjs + 1, sizeof(*v), SPACE_MAX_OBJS);
	if (!v)
		return NULL;
	s->objs = v;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->path = im->path;
	o->dev = im->dev;
	o->inode = im->inode;
	o->base = base;
	o->is_vdso = is_vdso;
	o->is_main = !is_vdso && o->inode == s->exe_inode && o->dev == s->exe_dev;
	o->img = im->img;
	o->syms = im->debug ? im->debug : im->img;
	o->build_id = im->img ? elf_image_build_id(im->img) : "";
	o->index = s->nobjs;
	o->image_index = im->index;
	obj_set_bias(o, first);
	obj_load_eh(o);
	s->objs[s->nobjs++] = o;
	return o;
}

static int same_file(const struct map_entry *a, const struct map_entry *b)
{
	return a->inode == b->inode && entry_dev(a) == entry_dev(b) && !strcmp(a->path, b->path);
}

int space_refresh(struct space *s)
{
	struct maps m;
	struct range *r = NULL;
	struct space_obj *o;
	size_t i, j, k, nr = 0;
	int is_vdso;

	maps_init(&m);
	s->last_refresh = clock_mono_ns();
	if (maps_read(&m, s->pid) < 0)
		return -1;
	r = calloc(m.n ? m.n : 1, sizeof(*r));
	if (!r)
		goto err;
	for (i = 0; i < m.n; i = j) {
		const struct map_entry *e = &m.v[i];

		is_vdso = !strcmp(e->path, "[vdso]");
		j = i + 1;
		if (!is_vdso && (e->inode == 0 || e->path[0] != '/'))
			continue;
		while (!is_vdso && j < m.n && same_file(&m.v[j], e))
			j++;
		o = obj_get(s, e, is_vdso);
		if (!o)
			continue;
		for (k = i; k < j; k++) {
			if ((m.v[k].perms & MAP_X) && !o->text_end) {
				o->text_start = m.v[k].start;
				o->text_end = m.v[k].end;
				o->text_offset = m.v[k].offset;
			}
			r[nr].start = m.v[k].start;
			r[nr].end = m.v[k].end;
			r[nr].obj = o;
			nr++;
		}
	}
	free(s->ranges);
	s->ranges = r;
	s->nranges = nr;
	s->hint = 0;
	maps_release(&m);
	return 0;
err:
	maps_release(&m);
	return -1;
}

struct space *space_new(pid_t pid)
{
	struct space *s;
	struct stat st;
	char p[64];

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = pid;
	snprintf(p, sizeof(p), "/proc/%d/exe", (int)pid);
	if (stat(p, &st) == 0) {
		s->exe_dev = (uint64_t)major(st.st_dev) << 32 | minor(st.st_dev);
		s->exe_inode = st.st_ino;
	}
	if (space_refresh(s) < 0) {
		int e = errno;

		space_free(s);
		errno = e;
		return NULL;
	}
	return s;
}

void space_free(struct space *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nimages; i++) {
		elf_image_free(s->images[i]->img);
		elf_image_free(s->images[i]->debug);
		elf_image_free(s->images[i]->mini);
		cfitab_release(&s->images[i]->cfi[0]);
		cfitab_release(&s->images[i]->cfi[1]);
		free(s->images[i]->path);
		free(s->images[i]);
	}
	for (i = 0; i < s->nobjs; i++)
		free(s->objs[i]);
	free(s->images);
	free(s->objs);
	free(s->ranges);
	free(s);
}

static struct range *range_find(struct space *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nranges, mid;

	if (s->hint < s->nranges && addr >= s->ranges[s->hint].start &&
	    addr < s->ranges[s->hint].end)
		return &s->ranges[s->hint];
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (addr < s->ranges[mid].start)
			hi = mid;
		else if (addr >= s->ranges[mid].end)
			lo = mid + 1;
		else {
			s->hint = mid;
			return &s->ranges[mid];
		}
	}
	return NULL;
}

struct space_obj *space_find(struct space *s, uint64_t addr)
{
	struct range *r = range_find(s, addr);

	if (!r && clock_mono_ns() - s->last_refresh >= SPACE_REFRESH_NS) {
		if (space_refresh(s) == 0)
			r = range_find(s, addr);
	}
	return r ? r->obj : NULL;
}

/* Where file i's table of kind k is read: its own 2 GiB half of a 4 GiB slot. */
static uint64_t cfi_addr(size_t i, int k)
{
	return SPACE_CFI_WINDOW + ((uint64_t)i << 32) + ((uint64_t)k << 31);
}

/* The table bytes first, then (.debug_frame) the converted frame, 8-aligned. */
static size_t cfi_frame_off(const struct cfitab *t)
{
	return (t->n * sizeof(*t->ent) + 7) & ~(size_t)7;
}

/* Whether img is a Go program (its linker writes a Go build ID note). */
static int is_go(const struct elf_image *img)
{
	const unsigned char *p;
	uint64_t vaddr;
	size_t n;
	int z;

	return elf_image_section(img, ".note.go.buildid", &p, &n, &vaddr, &z) == 0 ||
	       elf_image_section(img, ".go.buildinfo", &p, &n, &vaddr, &z) == 0;
}

int space_cfi(struct space *s, struct space_obj *o, int kind, struct space_cfi *out)
{
	struct image *im;
	struct cfitab *t;

	if (kind < 0 || kind > 1 || o->image_index >= s->nimages)
		return -1;
	im = s->images[o->image_index];
	t = &im->cfi[kind];
	if (im->cfi_state[kind] == 0)
		im->cfi_state[kind] = im->img && cfitab_load(t, im->img, kind) == 0 ? 1 : -1;
	if (im->cfi_state[kind] < 0)
		return -1;
	if (kind == SPACE_CFI_DEBUG_FRAME && !o->go_cfi)
		o->go_cfi = is_go(im->img) ? 1 : -1;
	out->start_ip = t->base + o->bias;
	out->end_ip = t->end + o->bias;
	out->table = cfi_addr(o->image_index, kind);
	out->table_len = t->n;
	if (kind == SPACE_CFI_EH_FRAME) {
		out->segbase = t->frame_vaddr + o->bias;
		out->load_offset = 0; /* .eh_frame's pointers are pc-relative */
	} else {
		out->segbase = out->table + cfi_frame_off(t);
		out->load_offset = o->bias;
	}
	return 0;
}

/* Bytes of a CFI table at its synthetic address. 0 or -1. */
static int cfi_read(struct space *s, uint64_t addr, void *out, size_t n)
{
	uint64_t off = addr - SPACE_CFI_WINDOW, w = off & 0x7fffffffu;
	size_t i = (size_t)(off >> 32), tb, fo;
	int k = (int)((off >> 31) & 1);
	const struct cfitab *t;

	if (i >= s->nimages || s->images[i]->cfi_state[k] != 1)
		return -1;
	t = &s->images[i]->cfi[k];
	tb = t->n * sizeof(*t->ent);
	fo = cfi_frame_off(t);
	if (w <= tb && n <= tb - w) {
		memcpy(out, (const unsigned char *)t->ent + w, n);
		return 0;
	}
	if (t->frame && w >= fo && w - fo < t->frame_len) {
		/* libunwind reads aligned words: the last one may pass the end. */
		size_t have = t->frame_len - (w - fo) < n ? t->frame_len - (w - fo) : n;

		memcpy(out, t->frame + (w - fo), have);
		memset((unsigned char *)out + have, 0, n - have);
		return 0;
	}
	return -1;
}

int space_read(struct space *s, uint64_t addr, void *out, size_t n)
{
	struct range *r;
	const void *p;

	if (addr >= SPACE_CFI_WINDOW)
		return cfi_read(s, addr, out, n);
	r = range_find(s, addr);
	if (!r || !r->obj->img)
		return -1;
	p = elf_image_ptr(r->obj->img, addr - r->obj->bias, n);
	if (!p)
		return -1;
	memcpy(out, p, n);
	return 0;
}

/* The object's MiniDebugInfo, decompressed on the first miss; NULL when none. */
static struct elf_image *obj_mini(struct space *s, const struct space_obj *o)
{
	struct image *im;

	if (o->is_vdso || o->image_index >= s->nimages)
		return NULL;
	im = s->images[o->image_index];
	if (im->mini_state == 0) {
		im->mini = minidebug_open(im->img);
		im->mini_state = im->mini ? 1 : -1;
	}
	return im->mini;
}

const char *space_symbol(struct space *s, struct space_obj *obj, uint64_t addr, uint64_t *start)
{
	struct elf_image *mini;
	const char *name;
	uint64_t st = 0;

	if (!obj || !obj->syms)
		return NULL;
	name = elf_image_symbol(obj->syms, addr - obj->bias, &st);
	if (!name && obj->syms != obj->img && obj->img)
		name = elf_image_symbol(obj->img, addr - obj->bias, &st);
	if (!name && obj->syms == obj->img && (mini = obj_mini(s, obj)))
		name = elf_image_symbol(mini, addr - obj->bias, &st);
	if (name && start)
		*start = st + obj->bias;
	return name;
}

int space_open_obj(struct space *s, const struct space_obj *o)
{
	struct map_entry e;

	if (!o || o->is_vdso || !o->text_end)
		return -1;
	memset(&e, 0, sizeof(e));
	e.start = o->text_start;
	e.end = o->text_end;
	e.inode = o->inode;
	e.path = o->path;
	return open_in_target(s, &e);
}

struct space_obj *space_main(struct space *s)
{
	size_t i;

	for (i = 0; i < s->nobjs; i++)
		if (s->objs[i]->is_main)
			return s->objs[i];
	return NULL;
}

struct space_obj *const *space_objects(struct space *s, size_t *n)
{
	*n = s->nobjs;
	return s->objs;
}
