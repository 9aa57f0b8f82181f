/*
 * got.c — finding and rewriting the GOT slots of the hooked functions
 * (got.h). One pass walks dl_iterate_phdr; for each object it reads
 * PT_DYNAMIC (DT_JMPREL/DT_PLTRELSZ, DT_RELA/DT_RELASZ, DT_SYMTAB,
 * DT_STRTAB/DT_STRSZ), every address checked against the object's PT_LOAD
 * segments and taken as relocated (glibc adjusts a writable dynamic
 * section in place) or, failing that, as relative to the load base. A
 * slot's page protection is the one /proc/self/maps gave at the start of
 * the pass (read with open/read, no stdio): a page the loader has not yet
 * made read-only (an object still being loaded by another thread) is
 * never left read-only by us. The pass costs one read of the maps file
 * and a walk of every object's relocations, no allocation.
 */
#include "shim/got.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GOT_MAX_RELOCS (1u << 22) /* per table: more is not an ELF object we trust */
#define GOT_MAX_DYN 4096          /* dynamic entries read per object */
#define GOT_MAX_RANGES 65536      /* mappings remembered from /proc/self/maps */
#define GOT_NAME_MAX 64

struct got_entry {
	uintptr_t slot;
	uintptr_t orig;
	uintptr_t hook;
};

struct got_range {
	uintptr_t lo, hi;
	int prot;
};

static struct got_entry *got_table; /* GOT_MAX entries, mmap'd on first use */
static size_t got_count;
uint64_t got_full;
static struct got_range *got_ranges; /* GOT_MAX_RANGES, mmap'd on first use */
static size_t got_nranges;

/* The object being walked: its base and loadable segments. */
struct got_obj {
	uintptr_t base;
	const ElfW(Phdr) *ph;
	size_t phnum;
};

static void *got_map(size_t bytes)
{
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static uintptr_t got_hex(const char **p, const char *end)
{
	uintptr_t v = 0;
	const char *s = *p;

	for (; s < end; s++) {
		int c = *s, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			break;
		v = v * 16 + (uintptr_t)d;
	}
	*p = s;
	return v;
}

/* One maps line "lo-hi rwxp ...": into got_ranges (in address order, as the kernel lists them). */
static void got_range_line(const char *s, const char *end)
{
	struct got_range r;

	r.lo = got_hex(&s, end);
	if (s >= end || *s++ != '-')
		return;
	r.hi = got_hex(&s, end);
	if (end - s < 4 || *s++ != ' ')
		return;
	r.prot = (s[0] == 'r' ? PROT_READ : 0) | (s[1] == 'w' ? PROT_WRITE : 0) |
		 (s[2] == 'x' ? PROT_EXEC : 0);
	if (got_nranges < GOT_MAX_RANGES)
		got_ranges[got_nranges++] = r;
}

/* Reads /proc/self/maps into got_ranges: 0, or -errno. */
static int got_read_maps(void)
{
	char buf[4096];
	size_t have = 0, i, start;
	ssize_t n;
	int fd;

	if (got_ranges == NULL &&
	    (got_ranges = got_map(GOT_MAX_RANGES * sizeof(struct got_range))) == NULL)
		return -ENOMEM;
	got_nranges = 0;
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		start = 0;
		for (i = 0; i < have; i++) {
			if (buf[i] == '\n') {
				got_range_line(buf + start, buf + i);
				start = i + 1;
			}
		}
		if (start == 0 && have == sizeof(buf))
			start = have; /* a line longer than the buffer: its head was all we need, drop it */
		memmove(buf, buf + start, have - start);
		have -= start;
	}
	close(fd);
	return 0;
}

/* The protection of the page holding a, as the maps file said; -1 if unmapped. */
static int got_page_prot(uintptr_t a)
{
	size_t lo = 0, hi = got_nranges, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (a < got_ranges[mid].lo)
			hi = mid;
		else if (a >= got_ranges[mid].hi)
			lo = mid + 1;
		else
			return got_ranges[mid].prot;
	}
	return -1;
}

/* Whether [a, a + len) lies in one PT_LOAD segment of o; *end: that segment's end. */
static int got_in(const struct got_obj *o, uintptr_t a, size_t len, uintptr_t *end)
{
	size_t i;

	for (i = 0; i < o->phnum; i++) {
		const ElfW(Phdr) *p = &o->ph[i];
		uintptr_t lo, hi;

		if (p->p_type != PT_LOAD)
			continue;
		if (__builtin_add_overflow(o->base, p->p_vaddr, &lo) ||
		    __builtin_add_overflow(lo, p->p_memsz, &hi))
			continue;
		if (a >= lo && a <= hi && len <= hi - a) {
			if (end != NULL)
				*end = hi;
			return 1;
		}
	}
	return 0;
}

/* A dynamic entry's address as the object sees it: relocated, or relative; 0 if neither fits. */
static uintptr_t got_addr(const struct got_obj *o, uintptr_t v, size_t len)
{
	uintptr_t a;

	if (got_in(o, v, len, NULL))
		return v;
	if (!__builtin_add_overflow(o->base, v, &a) && got_in(o, a, len, NULL))
		return a;
	return 0;
}

/* The hook whose name is the NUL-terminated string at s (bounded by end), or NULL. */
static const struct got_hook *got_match(const char *s, uintptr_t end, const struct got_hook *hooks,
					size_t n)
{
	size_t len = 0, i;

	while ((uintptr_t)(s + len) < end && len < GOT_NAME_MAX && s[len] != '\0')
		len++;
	if ((uintptr_t)(s + len) >= end || s[len] != '\0')
		return NULL;
	for (i = 0; i < n; i++)
		if (strlen(hooks[i].name) == len && memcmp(hooks[i].name, s, len) == 0)
			return &hooks[i];
	return NULL;
}

/* Stores v into slot, making its page writable for the store only. 0, or -errno. */
static int got_store(uintptr_t slot, uintptr_t v)
{
	uintptr_t page = slot & ~(uintptr_t)(SHIM_PAGE - 1);
	int prot = got_page_prot(slot);

	if (prot < 0)
		return -EFAULT;
	if (prot & PROT_WRITE) {
		__atomic_store_n((uintptr_t *)slot, v, __ATOMIC_RELEASE);
		return 0;
	}
	if (mprotect((void *)page, SHIM_PAGE, prot | PROT_WRITE) != 0)
		return -errno;
	__atomic_store_n((uintptr_t *)slot, v, __ATOMIC_RELEASE);
	if (mprotect((void *)page, SHIM_PAGE, prot) != 0)
		return -errno; /* left writable: still correct, and said */
	return 0;
}

struct got_pass {
	const struct got_hook *hooks;
	size_t nhooks;
	const void *self;
	int patched;
	int err;
};

/* Patches the slots of one relocation table (rela[0..count)) of object o. */
static void got_patch_table(struct got_pass *ps, const struct got_obj *o, const ElfW(Rela) *rela,
			    size_t count, const ElfW(Sym) *symtab, const char *strtab, size_t strsz)
{
	size_t i;

	for (i = 0; i < count && ps->err == 0; i++) {
		const ElfW(Rela) *r = &rela[i];
		unsigned long type = ELF64_R_TYPE(r->r_info), si = ELF64_R_SYM(r->r_info);
		const ElfW(Sym) *sym;
		const struct got_hook *h;
		uintptr_t slot, cur, end;
		int rc;

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || si == 0)
			continue;
		sym = symtab + si;
		if (si > GOT_MAX_RELOCS || !got_in(o, (uintptr_t)sym, sizeof(*sym), NULL))
			continue;
		if (sym->st_name >= strsz || !got_in(o, (uintptr_t)(strtab + sym->st_name), 1, &end))
			continue;
		h = got_match(strtab + sym->st_name, end, ps->hooks, ps->nhooks);
		if (h == NULL)
			continue;
		if (__builtin_add_overflow(o->base, r->r_offset, &slot) || (slot & 7) != 0 ||
		    !got_in(o, slot, sizeof(uintptr_t), NULL))
			continue;
		cur = __atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE);
		if (cur == (uintptr_t)h->fn)
			continue; /* patched already (by an earlier pass) */
		if (got_count >= GOT_MAX) {
			got_full++;
			continue;
		}
		got_table[got_count] = (struct got_entry){ slot, cur, (uintptr_t)h->fn };
		rc = got_store(slot, (uintptr_t)h->fn);
		if (rc != 0) {
			ps->err = rc;
			/* Stored or not, the entry lets got_restore check and undo it. */
		}
		got_count++;
		if (rc == 0)
			ps->patched++;
	}
}

/* Whether object o holds address a in a PT_LOAD segment (the shim: self). */
static int got_holds(const struct got_obj *o, const void *a)
{
	return got_in(o, (uintptr_t)a, 1, NULL);
}

static int got_patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct got_pass *ps = arg;
	struct got_obj o = { info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum };
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t jmprel = 0, rela = 0, symtab = 0, strtab = 0;
	size_t pltsz = 0, relasz = 0, strsz = 0, ndyn = 0, i;

	(void)size;
	if (ps->err != 0 || o.ph == NULL || o.phnum == 0 || o.phnum > 256)
		return 0;
	if (info->dlpi_name != NULL && strstr(info->dlpi_name, "linux-vdso") != NULL)
		return 0;
	if (got_holds(&o, ps->self))
		return 0;
	for (i = 0; i < o.phnum; i++) {
		if (o.ph[i].p_type == PT_DYNAMIC) {
			dyn = (const ElfW(Dyn) *)(o.base + o.ph[i].p_vaddr);
			ndyn = o.ph[i].p_memsz / sizeof(ElfW(Dyn));
		}
	}
	if (dyn == NULL || ndyn > GOT_MAX_DYN || !got_in(&o, (uintptr_t)dyn, ndyn * sizeof(*dyn), NULL))
		return 0;
	for (i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		switch (dyn[i].d_tag) {
		case DT_JMPREL: jmprel = dyn[i].d_un.d_ptr; break;
		case DT_PLTRELSZ: pltsz = dyn[i].d_un.d_val; break;
		case DT_RELA: rela = dyn[i].d_un.d_ptr; break;
		case DT_RELASZ: relasz = dyn[i].d_un.d_val; break;
		case DT_SYMTAB: symtab = dyn[i].d_un.d_ptr; break;
		case DT_STRTAB: strtab = dyn[i].d_un.d_ptr; break;
		case DT_STRSZ: strsz = dyn[i].d_un.d_val; break;
		default: break;
		}
	}
	symtab = got_addr(&o, symtab, sizeof(ElfW(Sym)));
	strtab = got_addr(&o, strtab, strsz != 0 ? strsz : 1);
	if (symtab == 0 || strtab == 0 || strsz == 0)
		return 0;
	pltsz /= sizeof(ElfW(Rela));
	relasz /= sizeof(ElfW(Rela));
	if (pltsz > 0 && pltsz <= GOT_MAX_RELOCS &&
	    (jmprel = got_addr(&o, jmprel, pltsz * sizeof(ElfW(Rela)))) != 0)
		got_patch_table(ps, &o, (const ElfW(Rela) *)jmprel, pltsz, (const ElfW(Sym) *)symtab,
				(const char *)strtab, strsz);
	if (relasz > 0 && relasz <= GOT_MAX_RELOCS &&
	    (rela = got_addr(&o, rela, relasz * sizeof(ElfW(Rela)))) != 0)
		got_patch_table(ps, &o, (const ElfW(Rela) *)rela, relasz, (const ElfW(Sym) *)symtab,
				(const char *)strtab, strsz);
	return 0;
}

int got_patch(const struct got_hook *hooks, size_t n, const void *self)
{
	struct got_pass ps = { hooks, n, self, 0, 0 };
	int rc;

	if (got_table == NULL && (got_table = got_map(GOT_MAX * sizeof(struct got_entry))) == NULL)
		return -ENOMEM;
	if ((rc = got_read_maps()) != 0)
		return rc;
	dl_iterate_phdr(got_patch_object, &ps);
	return ps.err != 0 ? ps.err : ps.patched;
}

/* The slots a restore may touch: those inside a loaded object's segments. */
struct got_live {
	uintptr_t slot;
	int found;
};

static int got_find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct got_live *l = arg;
	struct got_obj o = { info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum };

	(void)size;
	if (o.ph != NULL && o.phnum <= 256 && got_in(&o, l->slot, sizeof(uintptr_t), NULL)) {
		l->found = 1;
		return 1;
	}
	return 0;
}

int got_restore(void)
{
	size_t i;
	int restored = 0;

	if (got_table == NULL || got_count == 0)
		return 0;
	if (got_read_maps() != 0)
		got_nranges = 0; /* nothing can be stored: every slot stays as it is */
	for (i = got_count; i-- > 0;) {
		struct got_entry *e = &got_table[i];
		struct got_live l = { e->slot, 0 };

		/* A slot whose object was unloaded, or that holds another value now, is not ours. */
		dl_iterate_phdr(got_find_object, &l);
		if (!l.found || __atomic_load_n((uintptr_t *)e->slot, __ATOMIC_ACQUIRE) != e->hook)
			continue;
		if (got_store(e->slot, e->orig) == 0)
			restored++;
	}
	got_count = 0;
	return restored;
}

size_t got_saved(void)
{
	return got_count;
}
