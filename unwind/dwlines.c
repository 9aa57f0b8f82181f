/*
 * dwlines.c — an address's inline chain from libdw. The compile unit
 * holding the address comes from .debug_aranges (dwarf_addrdie), or from a
 * table of the units' own address ranges built once when the file has no
 * aranges (clang's default). The function around the address comes from
 * the unit's table of function ranges (unwind/dwfuncs.h), and the inlined
 * instances inside it from a descent through the DIEs that hold the
 * address (libdw's dwarf_getscopes() walks the whole unit on every call,
 * too slow in a large C++ program); a function the table lacks is
 * found with dwarf_getscopes() and dwarf_getscopes_die(), as eu-addr2line
 * does. Each DW_TAG_inlined_subroutine in the nesting is a frame whose
 * caller runs the line in its DW_AT_call_line; the function ends the
 * chain. The innermost frame's line is
 * the line table's row for the address. File names relative to the
 * unit's compilation directory are made absolute once and kept, and
 * every chain looked up is kept too (the next capture of a series asks
 * for mostly the same addresses). The file is mapped through
 * common/filefault.h (a truncation gives zeros, not SIGBUS) and handed to
 * libelf as memory; before libdw sees it, what its compressed sections
 * will inflate to is charged to unwind/dwguard.h's budgets. libdw
 * is never left to open files itself: a dwz alt file is found here by
 * build ID (or a stand-in set), and split DWARF, whose .dwo paths libdw
 * would open, is not read.
 */
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/err.h"
#include "common/filefault.h"
#include "common/troot.h"
#include "common/u64map.h"
#include "unwind/dwfuncs.h"
#include "unwind/dwguard.h"
#include "unwind/dwlines.h"
#include "unwind/elfimg.h"

#define CU_MAX (1u << 20)      /* compile units in the fallback table */
#define RANGES_PER_CU 4096     /* ranges read from one unit */
#define POOL_MAX (64u << 20)   /* bytes of joined file names */
#define MEMO_MAX (1u << 20)    /* addresses whose chains are kept */
#define MEMO_FRAMES (4u << 20) /* frames kept for them */
#define NEST_MAX 256           /* blocks and inlined instances descended into */
#define NAME_MAX_MSG 256       /* bytes of a file's name in messages */
#define ALT_DIR "/usr/lib/debug/.build-id/"
#define UNITS_SCAN (1u << 18)  /* compile units of one file (libdw keeps a record of each) */


/* A unit's address range, for files without .debug_aranges. */
struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off off; /* the unit DIE's offset */
};

struct pool_chunk {
	struct pool_chunk *next;
	char s[];
};

struct dwlines {
	int fd;
	struct filefault_map map; /* the file, when opened from fd */
	uint64_t charged;         /* bytes charged to the budget (dwguard_charge) */
	atomic_int damaged;       /* the file was truncated under us: noted, no more answers */
	char name[NAME_MAX_MSG];
	Elf *elf;
	Dwarf *dw;
	struct cu_range *cus; /* sorted by lo; built on the first aranges miss */
	size_t ncus, cus_cap;
	int cus_state;        /* 0 not built, 1 built, -1 failed */
	struct u64map joined; /* libdw's file name pointer -> our absolute copy */
	struct pool_chunk *pool;
	size_t pool_bytes;
	/* Chains already looked up: vaddr -> (first frame in memo_frames) << 8 | count. */
	struct u64map memo;
	struct dwlines_frame *memo_frames;
	size_t nmemo_frames, memo_cap;
	struct dwfuncs *funcs; /* each unit's function ranges */
	struct dwlines *alt;   /* the dwz file (or a stand-in) set as libdw's alt, or NULL */
	struct stat st;        /* of fd, at open; st_nlink 0: not taken (memory) */
};

static struct dwlines *dwlines_from(const void *data, size_t size, const char *name, int fd,
				    struct filefault_map *map, int is_alt, pid_t pid);
static struct dwlines *open_fd(int fd, int is_alt, pid_t pid);

/*
 * The alt file (dwz's common DWARF) of a file whose .gnu_debugaltlink
 * names one: only by its build ID under ALT_DIR, inside process pid's root
 * and with its credentials (common/troot.h; pid <= 0: the host's, for a
 * file debuginfod sent), opened with the same caps, and only when its own
 * build ID matches. libdw would otherwise
 * open the path the file names, as root, with no cap and no care for what
 * it is (a FIFO there blocks for ever). NULL when it is not found.
 */
static struct dwlines *alt_by_build_id(const unsigned char *id, size_t n, pid_t pid)
{
	char path[sizeof(ALT_DIR) + 2 + 1 + 2 * 64 + sizeof(".debug")];
	const char *why = NULL;
	const void *got;
	struct dwlines *alt;
	size_t i, k;
	int fd;

	if (n < 2 || n > 64)
		return NULL;
	k = (size_t)snprintf(path, sizeof(path), ALT_DIR "%02x/", id[0]);
	for (i = 1; i < n; i++)
		k += (size_t)snprintf(path + k, sizeof(path) - k, "%02x", id[i]);
	snprintf(path + k, sizeof(path) - k, ".debug");
	fd = troot_open(pid, path, TROOT_FOLLOW, &why);
	if (fd < 0 || !(alt = open_fd(fd, 1, pid)))
		return NULL;
	if (dwelf_elf_gnu_build_id(alt->elf, &got) != (ssize_t)n || memcmp(got, id, n) != 0) {
		dwlines_free(alt);
		return NULL;
	}
	return alt;
}

/*
 * Whether d's DWARF has skeleton units (split DWARF) or more units than
 * UNITS_SCAN: 0 neither, else noted and -1. libdw opens a skeleton's .dwo
 * file itself, at the path the unit names, as root, blocking and with no
 * cap, from many of the calls made here; so such a file is not read.
 */
static int split_units(struct dwlines *d)
{
	Dwarf_CU *cu = NULL;
	uint8_t type;
	size_t n = 0;
	int r;

	while ((r = dwarf_get_units(d->dw, cu, &cu, NULL, &type, NULL, NULL)) == 0) {
		if (type == DW_UT_skeleton) {
			note("%s: split DWARF (its units name .dwo files): not read, no source "
			     "lines for it (its frames keep their names)",
			     d->name[0] ? d->name : "a debug file");
			return -1;
		}
		if (++n > UNITS_SCAN) {
			note("%s: more than %u compile units: not read, no source lines for it",
			     d->name[0] ? d->name : "a debug file", UNITS_SCAN);
			return -1;
		}
	}
	return 0;
}

/* Give libdw its alt file when d's DWARF names one: the real one, or a stand-in. 0, or -1. */
static int alt_set(struct dwlines *d, int is_alt, pid_t pid)
{
	const char *altname;
	const void *id;
	ssize_t n = dwelf_dwarf_gnu_debugaltlink(d->dw, &altname, &id);

	if (n <= 0)
		return 0; /* none named: libdw looks for none */
	if (!is_alt)
		d->alt = alt_by_build_id(id, (size_t)n, pid);
	if (!d->alt) {
		size_t len;
		const void *standin = dwguard_standin(&len);

		d->alt = dwlines_from(standin, len, "", -1, NULL, 1, 0);
	}
	if (!d->alt)
		return -1;
	dwarf_setalt(d->dw, d->alt->dw);
	return 0;
}

/* A dwlines for the ELF data[0..size) (the map's, or the caller's), or NULL. */
static struct dwlines *dwlines_from(const void *data, size_t size, const char *name, int fd,
				    struct filefault_map *map, int is_alt, pid_t pid)
{
	struct dwlines *d = NULL;
	uint64_t charged = 0;
	Elf *elf = NULL;
	Dwarf *dw;

	if (!elf_image_libelf_ok(data, size) || dwguard_charge(data, size, name, &charged) < 0)
		goto fail;
	elf_version(EV_CURRENT);
	/* libelf reads the data in place and, inflating, rewrites section headers in it. */
	elf = elf_memory((char *)(uintptr_t)data, size);
	if (!elf)
		goto fail;
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw)
		goto fail;
	d = calloc(1, sizeof(*d));
	if (!d) {
		dwarf_end(dw);
		goto fail;
	}
	d->fd = fd;
	if (map)
		d->map = *map;
	else
		d->map.slot = -1;
	d->charged = charged;
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->elf = elf;
	d->dw = dw;
	if (!is_alt && split_units(d) != 0) {
		dwlines_free(d);
		return NULL;
	}
	if (alt_set(d, is_alt, pid) < 0) {
		dwlines_free(d); /* closes fd, unmaps, gives the charge back */
		return NULL;
	}
	d->funcs = dwfuncs_new(dw);
	u64map_init(&d->joined, 1u << 20);
	u64map_init(&d->memo, MEMO_MAX);
	return d;
fail:
	if (elf)
		elf_end(elf);
	dwguard_release(charged);
	if (map)
		filefault_unmap(map);
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* Take fd: map it and read its DWARF (is_alt: it is some file's alt file). */
static struct dwlines *open_fd(int fd, int is_alt, pid_t pid)
{
	struct dwlines *d;
	struct filefault_map map;
	char name[NAME_MAX_MSG];
	struct stat st;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr) ||
	    (uint64_t)st.st_size > DWLINES_MAX_FILE)
		goto fail;
	filefault_fd_name(fd, name, sizeof(name));
	/* Writable copy-on-write: libelf rewrites the headers of sections it inflates. */
	if (filefault_map(fd, (size_t)st.st_size, PROT_READ | PROT_WRITE, &map) < 0)
		goto fail;
	d = dwlines_from(map.data, map.size, name[0] ? name : "a debug file", fd, &map, is_alt, pid);
	if (d && st.st_nlink)
		d->st = st;
	return d;
fail:
	close(fd);
	return NULL;
}

struct dwlines *dwlines_open(int fd, pid_t pid)
{
	return open_fd(fd, 0, pid);
}

int dwlines_file(const struct dwlines *d, struct stat *st, char *hex, size_t cap)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *id;
	const void *p;
	ssize_t n, i;

	if (!d || !d->st.st_nlink || (n = dwelf_elf_gnu_build_id(d->elf, &p)) <= 0 ||
	    (size_t)n * 2 >= cap)
		return -1;
	id = p;
	for (i = 0; i < n; i++) {
		hex[2 * i] = digits[id[i] >> 4];
		hex[2 * i + 1] = digits[id[i] & 15];
	}
	hex[2 * n] = 0;
	*st = d->st;
	return 0;
}

struct dwlines *dwlines_open_mem(const void *data, size_t len)
{
	return dwlines_from(data, len, "an ELF file in memory", -1, NULL, 0, 0);
}

void dwlines_free(struct dwlines *d)
{
	struct pool_chunk *c, *n;

	if (!d)
		return;
	dwfuncs_free(d->funcs);
	dwarf_end(d->dw);
	dwlines_free(d->alt); /* set by us, so not ended by libdw */
	elf_end(d->elf);
	filefault_unmap(&d->map);
	dwguard_release(d->charged);
	if (d->fd >= 0)
		close(d->fd);
	free(d->cus);
	u64map_release(&d->joined);
	u64map_release(&d->memo);
	free(d->memo_frames);
	for (c = d->pool; c; c = n) {
		n = c->next;
		free(c);
	}
	free(d);
}

static int by_lo(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The table of every unit's ranges, for a file without .debug_aranges. */
static void cus_build(struct dwlines *d)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf_Die cu;

	d->cus_state = -1;
	while (dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t it = 0;
		unsigned k = 0;

		if (dwarf_offdie(d->dw, off + hsize, &cu)) {
			while (k++ < RANGES_PER_CU && (it = dwarf_ranges(&cu, it, &base, &lo, &hi)) > 0) {
				struct cu_range *v;

				if (hi <= lo)
					continue;
				v = array_grow(d->cus, &d->cus_cap, d->ncus + 1, sizeof(*v), CU_MAX);
				if (!v)
					goto done;
				d->cus = v;
				v[d->ncus].lo = lo;
				v[d->ncus].hi = hi;
				v[d->ncus++].off = off + hsize;
			}
		}
		off = next;
	}
done:
	if (d->ncus)
		qsort(d->cus, d->ncus, sizeof(*d->cus), by_lo);
	d->cus_state = 1;
}

/* The unit DIE covering addr. */
static Dwarf_Die *cu_of(struct dwlines *d, uint64_t addr, Dwarf_Die *out)
{
	size_t lo = 0, hi, mid, i, walk;

	if (dwarf_addrdie(d->dw, addr, out))
		return out;
	if (d->cus_state == 0)
		cus_build(d);
	hi = d->ncus;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (d->cus[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges may nest or overlap: look back a little for one that holds addr. */
	for (i = lo, walk = 0; i-- > 0 && walk < 64; walk++)
		if (addr >= d->cus[i].lo && addr < d->cus[i].hi)
			return dwarf_offdie(d->dw, d->cus[i].off, out);
	return NULL;
}

/* A copy of s in the pool; NULL when the pool is full. */
static const char *pool_copy(struct dwlines *d, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), n = la + 1 + lb + 1;
	struct pool_chunk *c;

	if (n > DWLINES_MAX_NAME || d->pool_bytes + n > POOL_MAX)
		return NULL;
	c = malloc(sizeof(*c) + n);
	if (!c)
		return NULL;
	memcpy(c->s, a, la);
	c->s[la] = '/';
	memcpy(c->s + la + 1, b, lb + 1);
	c->next = d->pool;
	d->pool = c;
	d->pool_bytes += n;
	return c->s;
}

/* file made absolute against cu's compilation directory when it is relative. */
static const char *absolute(struct dwlines *d, Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute a;
	const char *dir, *j;
	uint64_t v;

	if (!file)
		return "";
	if (file[0] == '/' || !file[0])
		return file;
	if (u64map_get(&d->joined, (uint64_t)(uintptr_t)file, &v))
		return (const char *)(uintptr_t)v;
	dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
	if (!dir || dir[0] != '/')
		return file;
	j = pool_copy(d, dir, file);
	if (!j)
		return file;
	u64map_put(&d->joined, (uint64_t)(uintptr_t)file, (uint64_t)(uintptr_t)j);
	return j;
}

/* The name a function is known by: its linkage name, else its plain name. */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *s;

	s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!s)
		s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!s)
		s = dwarf_diename(die);
	return s && strlen(s) < DWLINES_MAX_NAME ? s : NULL;
}

static void frame_fill(struct dwlines *d, Dwarf_Die *cu, Dwarf_Die *fn, struct dwlines_frame *f)
{
	int line = 0;

	f->name = die_name(fn);
	if (!f->name)
		f->name = "";
	f->file = absolute(d, cu, dwarf_decl_file(fn));
	f->start_line = dwarf_decl_line(fn, &line) == 0 && line > 0 ? line : 0;
}

/* Keep the chain out[0..n) of vaddr for the next capture (best effort). */
static void memo_put(struct dwlines *d, uint64_t vaddr, const struct dwlines_frame *out, size_t n)
{
	struct dwlines_frame *v;

	if (n > 255)
		return;
	v = array_grow(d->memo_frames, &d->memo_cap, d->nmemo_frames + n + 1, sizeof(*v), MEMO_FRAMES);
	if (!v)
		return;
	d->memo_frames = v;
	memcpy(v + d->nmemo_frames, out, n * sizeof(*v));
	if (u64map_put(&d->memo, vaddr, (uint64_t)d->nmemo_frames << 8 | n) == 0)
		d->nmemo_frames += n;
}

static size_t lookup(struct dwlines *d, uint64_t vaddr, struct dwlines_frame *out, size_t max);

/* Whether d's file is whole: once a read found it truncated, noted once, no answers. */
static int intact(struct dwlines *d)
{
	if (!filefault_damaged(&d->map))
		return 1;
	if (!atomic_exchange(&d->damaged, 1))
		note("%s changed on disk while it was read (truncated or rewritten in place): "
		     "no more source lines from it",
		     d->name);
	return 0;
}

size_t dwlines_lookup(struct dwlines *d, uint64_t vaddr, struct dwlines_frame *out, size_t max)
{
	uint64_t v;
	size_t n;

	if (!d || !max || !intact(d))
		return 0;
	if (u64map_get(&d->memo, vaddr, &v)) {
		n = (size_t)(v & 0xff) < max ? (size_t)(v & 0xff) : max;
		memcpy(out, d->memo_frames + (v >> 8), n * sizeof(*out));
		return n;
	}
	n = lookup(d, vaddr, out, max);
	if (!intact(d))
		return 0; /* what libdw read may have been the zeros of a truncated file */
	if (max >= DWLINES_MAX_FRAMES)
		memo_put(d, vaddr, out, n);
	return n;
}

/* The line of the call that an inlined instance stands for, 0 unknown. */
static int64_t call_line(Dwarf_Die *inl)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &w) == 0 && w < INT32_MAX)
		return (int64_t)w;
	return 0;
}

/*
 * From the function around vaddr (dwfuncs) down through the inlined
 * instances and blocks that hold it: nest[0] the function, then each
 * inlined instance, outermost first. The count, 0 when there is none.
 */
static size_t nest_down(struct dwlines *d, Dwarf_Die *cu, uint64_t vaddr, Dwarf_Die *nest,
			size_t max)
{
	Dwarf_Die cur, child;
	size_t n = 0, depth;
	int found;

	if (dwfuncs_find(d->funcs, cu, vaddr, &nest[0]) < 0)
		return 0;
	n = 1;
	cur = nest[0];
	for (depth = 0; depth < NEST_MAX && dwarf_child(&cur, &child) == 0; depth++) {
		found = 0;
		do {
			int tag = dwarf_tag(&child);

			if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
			     tag == DW_TAG_try_block || tag == DW_TAG_catch_block) &&
			    dwarf_haspc(&child, vaddr) == 1) {
				if (tag == DW_TAG_inlined_subroutine && n < max)
					nest[n++] = child;
				cur = child;
				found = 1;
				break;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
	}
	return n;
}

/* The same from libdw's scope search (functions dwfuncs does not index). */
static size_t nest_scopes(Dwarf_Die *cu, uint64_t vaddr, Dwarf_Die *nest, size_t max)
{
	Dwarf_Die inner, *scopes = NULL;
	size_t n = 0, k;
	int ns, i;

	ns = dwarf_getscopes(cu, vaddr, &scopes);
	if (ns <= 0) {
		free(scopes);
		return 0;
	}
	/* The physical nesting around the innermost scope: out through the callers. */
	inner = scopes[0];
	free(scopes);
	scopes = NULL;
	ns = dwarf_getscopes_die(&inner, &scopes);
	for (i = 0; i < ns && n < max; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram &&
		    tag != DW_TAG_entry_point)
			continue;
		nest[n++] = scopes[i];
		if (tag != DW_TAG_inlined_subroutine)
			break;
	}
	free(scopes);
	/* Innermost first from libdw: turn it around, the function first. */
	for (k = 0; k < n / 2; k++) {
		inner = nest[k];
		nest[k] = nest[n - 1 - k];
		nest[n - 1 - k] = inner;
	}
	return n;
}

/* The chain from libdw: the compile unit, the line row, the nesting. */
static size_t lookup(struct dwlines *d, uint64_t vaddr, struct dwlines_frame *out, size_t max)
{
	Dwarf_Die cu_mem, *cu, nest[DWLINES_MAX_FRAMES];
	Dwarf_Line *row;
	int64_t line = 0;
	size_t n, k = 0, i;
	int ln;

	cu = cu_of(d, vaddr, &cu_mem);
	if (!cu)
		return 0;
	row = dwarf_getsrc_die(cu, vaddr);
	if (row && dwarf_lineno(row, &ln) == 0 && ln > 0)
		line = ln;
	n = nest_down(d, cu, vaddr, nest, DWLINES_MAX_FRAMES);
	if (!n)
		n = nest_scopes(cu, vaddr, nest, DWLINES_MAX_FRAMES);
	/* Innermost first; each caller runs the line of the call into it. */
	for (i = n; i-- > 0 && k < max;) {
		frame_fill(d, cu, &nest[i], &out[k]);
		out[k++].line = line;
		line = call_line(&nest[i]);
	}
	return k;
}
