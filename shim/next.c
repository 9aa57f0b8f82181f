/*
 * next.c — finding the program's real allocator behind the shim (see
 * next.h): dlsym(RTLD_NEXT) for each function, dladdr to check that they
 * all come from the object that defines malloc, emulations for the few
 * that allocator may lack, and the bootstrap arena that serves the
 * allocations made while dlsym runs. Cost: once per process, on the first
 * allocation (~10 dlsym and dladdr calls); afterwards a slot
 * is one indirect jump, like the GOT entry it replaces.
 */
#include "shim/next.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

char next_arena[NEXT_ARENA_BYTES] __attribute__((aligned(SHIM_PAGE)));
static uint32_t next_arena_size[NEXT_ARENA_BYTES / SHIM_PAGE]; /* bytes of the block at page i */
static size_t next_arena_used;                                 /* bytes handed out (atomic) */

int next_injected;
static int next_state;      /* 0 unresolved, 1 resolving, 2 resolved */
static int next_kind_v;     /* NEXT_* */
static char next_obj[256];  /* the allocator's object */
static char next_why_v[160];

/* Bootstrap slots: resolve, or use the arena while resolution runs. */
static void *boot_malloc(size_t n);
static void boot_free(void *p);
static void *boot_calloc(size_t n, size_t size);
static void *boot_realloc(void *p, size_t n);
static void *boot_memalign(size_t align, size_t n);
static void *boot_aligned_alloc(size_t align, size_t n);
static int boot_posix_memalign(void **out, size_t align, size_t n);
static void *boot_valloc(size_t n);
static void *boot_pvalloc(size_t n);
static size_t boot_usable(void *p);

struct shim_next shim_next = {
	boot_malloc, boot_free, boot_calloc, boot_realloc, boot_memalign,
	boot_aligned_alloc, boot_posix_memalign, boot_valloc, boot_pvalloc, boot_usable,
};

void *next_boot_alloc(size_t n, size_t align)
{
	size_t pages, off;

	if (align > SHIM_PAGE || n > NEXT_ARENA_BYTES)
		return NULL;
	pages = (n + SHIM_PAGE - 1) / SHIM_PAGE;
	if (pages == 0)
		pages = 1;
	off = __atomic_fetch_add(&next_arena_used, pages * SHIM_PAGE, __ATOMIC_RELAXED);
	if (off + pages * SHIM_PAGE > NEXT_ARENA_BYTES) {
		errno = ENOMEM;
		return NULL; /* spent: the bytes stay counted, nothing is reused */
	}
	next_arena_size[off / SHIM_PAGE] = (uint32_t)n;
	return next_arena + off; /* .bss, never handed out twice: zero */
}

size_t next_boot_usable(const void *p)
{
	size_t i = (size_t)((const char *)p - next_arena) / SHIM_PAGE;

	return next_arena_size[i];
}

static void *boot_malloc(size_t n)
{
	return next_resolve() ? shim_next.malloc(n) : next_boot_alloc(n, 16);
}

static void boot_free(void *p)
{
	if (p == NULL || next_boot_owns(p))
		return;
	if (next_resolve())
		shim_next.free(p);
	/* else a foreign block freed while resolving: leaked, never misfreed */
}

static void *boot_calloc(size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return next_resolve() ? shim_next.calloc(n, size) : next_boot_alloc(total, 16);
}

static void *boot_realloc(void *p, size_t n)
{
	void *q;

	if (next_resolve() && !next_boot_owns(p))
		return shim_next.realloc(p, n);
	q = next_resolve() ? shim_next.malloc(n) : next_boot_alloc(n, 16);
	if (q != NULL && p != NULL) {
		size_t old = next_boot_owns(p) ? next_boot_usable(p) : 0;

		memcpy(q, p, old < n ? old : n);
	}
	return q;
}

static void *boot_memalign(size_t align, size_t n)
{
	return next_resolve() ? shim_next.memalign(align, n) : next_boot_alloc(n, align);
}

static void *boot_aligned_alloc(size_t align, size_t n)
{
	return next_resolve() ? shim_next.aligned_alloc(align, n) : next_boot_alloc(n, align);
}

static int boot_posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (next_resolve())
		return shim_next.posix_memalign(out, align, n);
	p = next_boot_alloc(n, align);
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

static void *boot_valloc(size_t n)
{
	return next_resolve() ? shim_next.valloc(n) : next_boot_alloc(n, SHIM_PAGE);
}

static void *boot_pvalloc(size_t n)
{
	return next_resolve() ? shim_next.pvalloc(n) : next_boot_alloc(n, SHIM_PAGE);
}

static size_t boot_usable(void *p)
{
	if (p == NULL)
		return 0;
	if (next_boot_owns(p))
		return next_boot_usable(p);
	return next_resolve() ? shim_next.usable(p) : 0;
}

/* Emulations on the allocator's own aligned allocation, for functions it lacks. */
static void *(*emu_aligned_alloc_fn)(size_t, size_t);
static int (*emu_posix_memalign_fn)(void **, size_t, size_t);

/* memalign from whichever aligned primitive the allocator has. */
static void *emu_memalign(size_t align, size_t n)
{
	size_t a = sizeof(void *), r;
	void *p = NULL;
	int rc;

	while (a < align && a < ((size_t)1 << 62)) /* a power of two, as glibc rounds */
		a *= 2;
	if (emu_posix_memalign_fn == NULL) {
		/* C11 wants a multiple of the alignment. */
		if (__builtin_add_overflow(n, a - 1, &r)) {
			errno = ENOMEM;
			return NULL;
		}
		r &= ~(a - 1);
		return emu_aligned_alloc_fn(a, r == 0 ? a : r);
	}
	rc = emu_posix_memalign_fn(&p, a, n);
	if (rc != 0) {
		errno = rc;
		return NULL;
	}
	return p;
}

static void *emu_aligned_alloc(size_t align, size_t n)
{
	return shim_next.memalign(align, n);
}

static int emu_posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (align == 0 || align % sizeof(void *) != 0 ||
	    ((align / sizeof(void *)) & (align / sizeof(void *) - 1)) != 0)
		return EINVAL;
	p = shim_next.memalign(align, n);
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

static void *emu_valloc(size_t n)
{
	return shim_next.memalign(SHIM_PAGE, n);
}

static void *emu_pvalloc(size_t n)
{
	size_t r;

	if (__builtin_add_overflow(n, SHIM_PAGE - 1, &r)) {
		errno = ENOMEM;
		return NULL;
	}
	r &= ~(size_t)(SHIM_PAGE - 1);
	return shim_next.memalign(SHIM_PAGE, r == 0 ? SHIM_PAGE : r);
}

/* The object that defines address f (its load base), or NULL. */
static void *next_base(void *f, const char **name)
{
	Dl_info info;

	if (f == NULL || dladdr(f, &info) == 0)
		return NULL;
	if (name != NULL)
		*name = info.dli_fname != NULL ? info.dli_fname : "?";
	return info.dli_fbase;
}

/*
 * Whether def, the address dlsym(RTLD_DEFAULT, name) gave, is a non-PIE
 * executable's canonical PLT entry rather than a definition: a program
 * that takes the function's address (a table of allocators) has it as an
 * undefined dynamic symbol with the stub's address as its value, which
 * dlsym returns, although the stub jumps to the real first definition
 * (ours). Read from the main program's own GNU hash table, in memory,
 * with no allocation; where it has none, 0 (a definition).
 */
static int next_placeholder(void *def, const char *name)
{
	const ElfW(Sym) *symtab = NULL, *sym;
	const char *strtab = NULL;
	const uint32_t *gh = NULL, *buckets, *chain;
	const ElfW(Addr) *bloom;
	const ElfW(Dyn) *d;
	struct link_map *lm = NULL;
	uint32_t h = 5381, nb, off, i, steps;
	Dl_info info;
	const unsigned char *c;

	/* The main program only: non-PIE (its dynamic entries are addresses as they stand). */
	if (!dladdr1(def, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm || !lm->l_ld ||
	    (lm->l_name && lm->l_name[0]) || lm->l_addr != 0)
		return 0;
	for (d = lm->l_ld, steps = 0; d->d_tag != DT_NULL && steps < 4096; d++, steps++) {
		if (d->d_tag == DT_SYMTAB)
			symtab = (const ElfW(Sym) *)d->d_un.d_ptr;
		else if (d->d_tag == DT_STRTAB)
			strtab = (const char *)d->d_un.d_ptr;
		else if (d->d_tag == DT_GNU_HASH)
			gh = (const uint32_t *)d->d_un.d_ptr;
	}
	if (!symtab || !strtab || !gh || gh[0] == 0)
		return 0;
	for (c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	nb = gh[0];
	off = gh[1];
	bloom = (const ElfW(Addr) *)(gh + 4);
	buckets = (const uint32_t *)(bloom + gh[2]);
	chain = buckets + nb;
	i = buckets[h % nb];
	if (i < off)
		return 0;
	for (steps = 0; steps < (1u << 20); i++, steps++) {
		sym = &symtab[i];
		if ((chain[i - off] | 1) == (h | 1) && strcmp(strtab + sym->st_name, name) == 0)
			return sym->st_shndx == SHN_UNDEF && (void *)sym->st_value == def;
		if (chain[i - off] & 1)
			break;
	}
	return 0;
}

static const char *next_basename(const char *path)
{
	const char *s = strrchr(path, '/');

	return s != NULL ? s + 1 : path;
}

/* One function of the family: its next definition, and whether malloc's object defines it. */
struct next_sym {
	const char *name;
	void **slot;
	void *emu;  /* emulation when the object lacks it; NULL: core, must be there */
	void *found;
	int same;
};

/*
 * Looks every function up and fills the slots (still unpublished: the
 * bootstrap slots stay in place until all are known).
 */
static void next_lookup(void)
{
	struct shim_next real;
	struct next_sym s[] = {
		{ "free", (void **)&real.free, NULL, NULL, 0 },
		{ "calloc", (void **)&real.calloc, NULL, NULL, 0 },
		{ "realloc", (void **)&real.realloc, NULL, NULL, 0 },
		{ "malloc_usable_size", (void **)&real.usable, NULL, NULL, 0 },
		{ "memalign", (void **)&real.memalign, (void *)emu_memalign, NULL, 0 },
		{ "aligned_alloc", (void **)&real.aligned_alloc, (void *)emu_aligned_alloc, NULL, 0 },
		{ "posix_memalign", (void **)&real.posix_memalign, (void *)emu_posix_memalign, NULL, 0 },
		{ "valloc", (void **)&real.valloc, (void *)emu_valloc, NULL, 0 },
		{ "pvalloc", (void **)&real.pvalloc, (void *)emu_pvalloc, NULL, 0 },
	};
	const size_t n = sizeof(s) / sizeof(s[0]);
	const char *mname = "?", *oname = "?";
	void *m, *base, *def, *self;
	size_t i;
	int kind;

	void *handle = next_injected ? RTLD_DEFAULT : RTLD_NEXT;

	m = dlsym(handle, "malloc");
	base = next_base(m, &mname);
	snprintf(next_obj, sizeof(next_obj), "%s", mname);
	kind = strncmp(next_basename(mname), "libc.so", 7) == 0 ? NEXT_GLIBC : NEXT_FOREIGN;
	for (i = 0; i < n; i++) {
		s[i].found = dlsym(handle, s[i].name);
		s[i].same = base != NULL && next_base(s[i].found, NULL) == base;
	}
	real.malloc = (void *(*)(size_t))m;
	def = dlsym(RTLD_DEFAULT, "malloc");
	self = next_base((void *)next_resolve, NULL);
	if (next_injected)
		kind = NEXT_FOREIGN;
	if (m == NULL || base == NULL) {
		snprintf(next_why_v, sizeof(next_why_v), "no malloc found after libcprof.so");
		kind = NEXT_PASS;
	} else if (next_injected && next_placeholder(m, "malloc")) {
		snprintf(next_why_v, sizeof(next_why_v),
			 "malloc's address in the program is its PLT entry (non-PIE, address taken)");
		kind = NEXT_PASS;
	} else if (!next_injected && next_base(def, NULL) != self && !next_placeholder(def, "malloc")) {
		(void)next_base(def, &oname);
		snprintf(next_why_v, sizeof(next_why_v),
			 "malloc is defined by %s, ahead of libcprof.so", oname);
		kind = NEXT_PASS;
	}
	for (i = 0; i < n && kind != NEXT_PASS; i++) {
		if (s[i].emu == NULL && !s[i].same) {
			(void)next_base(s[i].found, &oname);
			snprintf(next_why_v, sizeof(next_why_v), "malloc comes from %s but %s from %s",
				 mname, s[i].name, s[i].found != NULL ? oname : "nowhere");
			kind = NEXT_PASS;
		}
	}
	/* The emulations need one aligned primitive of the allocator's own. */
	emu_aligned_alloc_fn = s[5].same ? (void *(*)(size_t, size_t))s[5].found : NULL;
	emu_posix_memalign_fn = s[6].same ? (int (*)(void **, size_t, size_t))s[6].found : NULL;
	if (kind != NEXT_PASS && !s[4].same && !s[5].same && !s[6].same) {
		snprintf(next_why_v, sizeof(next_why_v), "%s has no aligned allocation of its own",
			 mname);
		kind = NEXT_PASS;
	}
	for (i = 0; i < n; i++) {
		if (kind == NEXT_PASS || s[i].same)
			*s[i].slot = s[i].found != NULL ? s[i].found : s[i].emu;
		else
			*s[i].slot = s[i].emu;
	}
	/* glibc defines every one of them, so nothing below is ever NULL with it. */
	/* Publish: each slot is one aligned pointer store, seen whole by any thread. */
	__atomic_store_n(&shim_next.free, real.free, __ATOMIC_RELAXED);
	__atomic_store_n(&shim_next.calloc, real.calloc, __ATOMIC_RELAXED);
	__atomic_store_n(&shim_next.realloc, real.realloc, __ATOMIC_RELAXED);
	__atomic_store_n(&shim_next.memalign, real.memalign, __ATOMIC_RELAXED);
	__atomic_store_n(&shim_next.aligned_alloc, real.aligned_alloc, __ATOMIC_RELAXED);
	__atomic_store_n(&shim_next.posix_memalign, real.posix_memalign, __ATOMIC_RELAXED);
	__atomic_store_n(&shim_next.valloc, real.valloc, __ATOMIC_RELAXED);
	__atomic_store_n(&shim_next.pvalloc, real.pvalloc, __ATOMIC_RELAXED);
	__atomic_store_n(&shim_next.usable, real.usable, __ATOMIC_RELAXED);
	__atomic_store_n(&shim_next.malloc, real.malloc, __ATOMIC_RELAXED);
	__atomic_store_n(&next_kind_v, kind, __ATOMIC_RELEASE);
}

int next_resolve(void)
{
	int expected = 0;

	if (__atomic_load_n(&next_state, __ATOMIC_ACQUIRE) == 2)
		return 1;
	if (!__atomic_compare_exchange_n(&next_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return expected == 2;
	shim_tls.busy++;
	next_lookup();
	shim_tls.busy--;
	__atomic_store_n(&next_state, 2, __ATOMIC_RELEASE);
	return 1;
}

int next_resolved(void)
{
	return __atomic_load_n(&next_state, __ATOMIC_ACQUIRE) == 2;
}

void next_wait(void)
{
	unsigned i;

	for (i = 0; i < 10000 && __atomic_load_n(&next_state, __ATOMIC_ACQUIRE) == 1; i++)
		sched_yield();
}

int next_kind(void)
{
	return __atomic_load_n(&next_kind_v, __ATOMIC_ACQUIRE);
}

const char *next_object(void)
{
	return next_kind() == NEXT_UNRESOLVED ? "" : next_obj;
}

const char *next_why(void)
{
	return next_kind() == NEXT_PASS ? next_why_v : "";
}
