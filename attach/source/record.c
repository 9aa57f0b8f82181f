/*
 * record.c — unwind a thread image, turn each address into a profile
 * location (mapping + function), add the sample. Location ids are cached
 * by address in a small open-addressing map; a profile of a 30-second
 * capture has a few thousand distinct addresses, each symbolized once.
 * During the capture an address gets a name only (the symbol tables; for
 * stripped code the function start its FDE gives, "module+0xOFF"; for
 * code outside every object, the JIT's perf map); recorder_lines()
 * (lines.c) then gives every address of an object with DWARF its source
 * lines and inlined frames, after the capture, once per address.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attach/source/record.h"
#include "attach/source/record_int.h"
#include "common/fnv.h"
#include "common/proc.h"
#include "common/u64map.h"
#include "common/watchdog.h"
#include "unwind/demangle.h"
#include "unwind/elfimg.h"
#include "unwind/funcstart.h"
#include "unwind/perfmap.h"
#include "unwind/space.h"
#include "unwind/unwinder.h"

#define CACHE_MAX (1u << 22)
#define NOT_UNWOUND "[not unwound: the capture was stopped by a signal]"
#define LAST_MAX 65536
#define PERFMAP_REREAD_NS 1000000000ull /* a perf map is read again at most once a second */

/* The last stack recorded under a key, for recorder_repeat(). */
struct last_stack {
	size_t n;
	uint64_t ids[];
};

static uint64_t recorder_mapping(struct recorder *r, struct space_obj *o)
{
	struct profile_mapping_in m;
	uint64_t *v;

	if (o->index >= r->nmap_ids) {
		size_t n = o->index + 16;

		v = realloc(r->map_ids, n * sizeof(*v));
		if (!v)
			return 0;
		memset(v + r->nmap_ids, 0, (n - r->nmap_ids) * sizeof(*v));
		r->map_ids = v;
		r->nmap_ids = n;
	}
	if (r->map_ids[o->index])
		return r->map_ids[o->index];
	memset(&m, 0, sizeof(m));
	m.start = o->text_start;
	m.limit = o->text_end;
	m.offset = o->text_offset;
	m.filename = o->path;
	m.build_id = o->build_id;
	/*
	 * We symbolized what could be symbolized; pprof must not retry. An
	 * object without any symbol table keeps has_functions clear: its
	 * "module+0xOFF" names stand in until someone with its debug file
	 * lets pprof symbolize it (build ID and addresses are kept).
	 */
	m.has_functions = o->syms && elf_image_nsymbols(o->syms) > 0;
	r->map_ids[o->index] = profile_add_mapping(r->prof, &m);
	return r->map_ids[o->index];
}

/* The name of a JIT function at addr from the target's perf map, or NULL. */
static const char *recorder_jit(struct recorder *r, uint64_t addr, uint64_t *start)
{
	const char *name = r->jit_state > 0 ? perfmap_find(&r->jit, addr, start) : NULL;
	uint64_t now;

	if (name || r->jit_state < 0)
		return name;
	/* New code appears as the JIT runs: read again on a miss, at most once a second. */
	now = clock_mono_ns();
	if (r->jit_state > 0 && now - r->jit_read_ns < PERFMAP_REREAD_NS)
		return NULL;
	r->jit_read_ns = now;
	if (perfmap_read(&r->jit, r->pid) < 0) {
		if (r->jit_state == 0)
			r->jit_state = -1; /* the target writes none */
		return NULL;
	}
	r->jit_state = 1;
	return perfmap_find(&r->jit, addr, start);
}

/* "module+0xOFF": the function starting at ELF address OFF of o, which has no name. */
static const char *unnamed(const struct space_obj *o, uint64_t start, char *out, size_t cap)
{
	const char *base = strrchr(o->path, '/');

	snprintf(out, cap, "%s+%#llx", base ? base + 1 : o->path,
		 (unsigned long long)(start - o->bias));
	return out;
}

/*
 * sigframe: the address is a signal trampoline, whose frame always gets
 * the name gdb gives it: reached as a handler's return address (less one,
 * before the trampoline's symbol) it has none, and a thread sampled inside
 * rt_sigreturn was named __restore_rt where libc's symbols are at hand,
 * one frame under two names (and its caller's exact pc not marked as
 * following a signal frame).
 */
static uint64_t recorder_symbolize(struct recorder *r, uint64_t addr, int sigframe)
{
	struct space_obj *o = space_find(r->space, addr);
	struct profile_line line = { 0, 0 };
	uint64_t mid = 0, start = 0, id;
	const char *name = NULL;
	char readable[1024], anon[300];

	if (o)
		mid = recorder_mapping(r, o);
	if (sigframe)
		name = "[signal handler called]";
	else if (o)
		name = space_symbol(r->space, o, addr, &start);
	else
		name = recorder_jit(r, addr, &start);
	if (!name && o && funcstart_find(r->space, o, addr, &start) == 0)
		name = unnamed(o, start, anon, sizeof(anon));
	if (name)
		line.function_id = profile_intern_function(
			r->prof, demangle(name, readable, sizeof(readable)), name, "", 0);
	id = profile_intern_location(r->prof, mid, addr, &line, line.function_id ? 1 : 0);
	if (id && start)
		profile_location_set_offset(r->prof, id, (int64_t)(addr - start));
	return id;
}

static uint64_t recorder_location(struct recorder *r, uint64_t addr, int sigframe)
{
	uint64_t id;

	if (u64map_get(&r->locs, addr, &id))
		return id;
	id = recorder_symbolize(r, addr, sigframe);
	if (id)
		u64map_put(&r->locs, addr, id); /* full: still correct, only slower */
	return id;
}

static uint64_t recorder_marker(struct recorder *r, const char *name)
{
	struct profile_line line = { 0, 0 };

	line.function_id = profile_intern_function(r->prof, name, name, "", 0);
	return line.function_id ? profile_intern_location(r->prof, 0, 0, &line, 1) : 0;
}

struct recorder *recorder_new(struct profile *prof, pid_t pid, size_t max_depth)
{
	struct recorder *r = calloc(1, sizeof(*r));
	struct space_obj *main_obj;
	int e = ENOMEM;

	if (!r)
		return NULL;
	r->prof = prof;
	r->pid = pid;
	perfmap_init(&r->jit);
	r->max_depth = max_depth ? max_depth : 1;
	u64map_init(&r->locs, CACHE_MAX);
	u64map_init(&r->last, LAST_MAX);
	r->pcs = calloc(r->max_depth, sizeof(*r->pcs));
	r->sig = calloc(r->max_depth, sizeof(*r->sig));
	/* The user stack's frames, a marker, and the kernel's frames beside them. */
	r->ids = calloc(r->max_depth + 1 + RECORD_KERNEL_MAX, sizeof(*r->ids));
	if (!r->pcs || !r->sig || !r->ids)
		goto err;
	r->space = space_new(pid);
	if (!r->space) {
		e = errno;
		goto err;
	}
	r->unw = unwinder_new(r->space);
	if (!r->unw)
		goto err;
	main_obj = space_main(r->space);
	if (main_obj)
		recorder_mapping(r, main_obj);
	return r;
err:
	recorder_free(r);
	errno = e;
	return NULL;
}

void recorder_free(struct recorder *r)
{
	size_t i;

	if (!r)
		return;
	unwinder_free(r->unw);
	space_free(r->space);
	free(r->pcs);
	free(r->sig);
	free(r->pcs2);
	free(r->sig2);
	free(r->ids);
	free(r->map_ids);
	u64map_release(&r->locs);
	perfmap_release(&r->jit);
	for (i = 0; i < r->last.nslots; i++)
		if (r->last.slots[i].used)
			free((void *)(uintptr_t)r->last.slots[i].value);
	u64map_release(&r->last);
	free(r);
}

/* Keep ids[0..k) as the last stack under key (best effort). */
static void remember(struct recorder *r, uint64_t key, size_t k)
{
	struct last_stack *ls = NULL;
	uint64_t v;

	if (u64map_get(&r->last, key, &v))
		ls = (struct last_stack *)(uintptr_t)v;
	if (!ls || ls->n < k) {
		struct last_stack *n = realloc(ls, sizeof(*ls) + k * sizeof(ls->ids[0]));

		if (!n)
			return;
		ls = n;
		if (u64map_put(&r->last, key, (uint64_t)(uintptr_t)ls) < 0) {
			free(ls);
			return;
		}
	}
	ls->n = k;
	memcpy(ls->ids, r->ids, k * sizeof(ls->ids[0]));
}

void recorder_remember(struct recorder *r, uint64_t key)
{
	remember(r, key, r->last_n);
}

int recorder_repeat(struct recorder *r, uint64_t key, const int64_t *values,
		    const struct profile_label_in *labels, size_t nlabels)
{
	const struct last_stack *ls;
	uint64_t v;

	if (!u64map_get(&r->last, key, &v))
		return -1;
	ls = (const struct last_stack *)(uintptr_t)v;
	if (profile_add_sample(r->prof, ls->ids, ls->n, values, labels, nlabels) < 0) {
		r->stats.failed++;
		return -1;
	}
	r->stats.repeated++;
	return 0;
}

int recorder_add_refill(struct recorder *r, unsigned when, recorder_refill_fn *fn, void *ctx)
{
	if (r->nrefills >= RECORDER_REFILLS)
		return -1;
	if (!r->pcs2) {
		r->pcs2 = calloc(r->max_depth, sizeof(*r->pcs2));
		r->sig2 = calloc(r->max_depth, sizeof(*r->sig2));
		if (!r->pcs2 || !r->sig2)
			return -1;
	}
	r->refills[r->nrefills++] = (struct recorder_refill){ when, fn, ctx };
	return 0;
}

/*
 * A walk of n frames that stopped for want of stack bytes (*flags): walk
 * again over the image each refill function for it builds, and keep the
 * first walk that goes further. The frames' count kept, with *flags to
 * match.
 */
static size_t recorder_refill(struct recorder *r, const struct thread_image *img, size_t n,
			      unsigned *flags)
{
	unsigned cause = UNWIND_CAUSE(*flags), flags2, k;
	int crossed = 0;
	size_t i, n2;

	if (cause != UNWIND_CAUSE_STACK_COPY && cause != UNWIND_CAUSE_MEMORY)
		return n;
	for (i = 0; i < n && !crossed; i++)
		crossed = r->sig[i] != 0;
	for (k = 0; k < r->nrefills; k++) {
		if ((r->refills[k].when == RECORDER_REFILL_SIGNAL && !crossed) ||
		    r->refills[k].fn(r->refills[k].ctx, img, &r->img2) < 0)
			continue;
		flags2 = 0;
		n2 = unwinder_unwind(r->unw, &r->img2, r->pcs2, r->sig2, r->max_depth, &flags2);
		if (n2 <= n)
			continue;
		memcpy(r->pcs, r->pcs2, n2 * sizeof(*r->pcs));
		memcpy(r->sig, r->sig2, n2 * sizeof(*r->sig));
		*flags = flags2;
		return n2;
	}
	return n;
}

/*
 * A kernel function's location: under the kernel's mapping, keyed in the
 * location cache by its name's hash with bit 62 set (above every user
 * address, below every kernel one), so that it is interned once.
 */
static uint64_t recorder_kernel_location(struct recorder *r, const char *name)
{
	struct profile_mapping_in m;
	struct profile_line line = { 0, 0 };
	uint64_t key = (fnv_bytes(FNV_OFFSET, name, strlen(name)) & ((1ull << 62) - 1)) | 1ull << 62, id;

	if (u64map_get(&r->locs, key, &id))
		return id;
	if (!r->kernel_map) {
		memset(&m, 0, sizeof(m));
		m.filename = PROFILE_KERNEL_MAPPING;
		m.has_functions = 1;
		r->kernel_map = profile_add_mapping(r->prof, &m);
		if (!r->kernel_map)
			return 0;
	}
	line.function_id = profile_intern_function(r->prof, name, name, "", 0);
	if (!line.function_id)
		return 0;
	id = profile_intern_location(r->prof, r->kernel_map, 0, &line, 1);
	if (id)
		u64map_put(&r->locs, key, id);
	return id;
}

void recorder_kernel(struct recorder *r, const char *const *names, unsigned n)
{
	uint64_t id;
	unsigned i;

	r->nkids = 0;
	for (i = 0; i < n && r->nkids < RECORD_KERNEL_MAX; i++)
		if (names[i] && (id = recorder_kernel_location(r, names[i])))
			r->kids[r->nkids++] = id;
}

/* Unwind img into r->ids, the kernel's frames first: how many ids. */
static size_t recorder_walk(struct recorder *r, const struct thread_image *img)
{
	unsigned flags = 0;
	size_t i, n, k = 0;
	uint64_t id;

	n = unwinder_unwind(r->unw, img, r->pcs, r->sig, r->max_depth, &flags);
	if (r->nrefills && (flags & UNWIND_PARTIAL))
		n = recorder_refill(r, img, n, &flags);
	r->last_flags = flags;
	/* The kernel's frames first (innermost), beside the user stack's depth, not in it. */
	for (i = 0; i < r->nkids; i++)
		r->ids[k++] = r->kids[i];
	r->nkids = 0;
	for (i = 0; i < n; i++) {
		id = recorder_location(r, r->pcs[i], r->sig[i]);
		if (id)
			r->ids[k++] = id;
	}
	if (flags & UNWIND_TRUNCATED) {
		r->stats.truncated++;
		if ((id = recorder_marker(r, "[truncated]")))
			r->ids[k++] = id;
	} else if (flags & UNWIND_PARTIAL) {
		unsigned cause = UNWIND_CAUSE(flags) < UNWIND_NCAUSES ? UNWIND_CAUSE(flags) : 0;
		char name[64];

		r->stats.partial++;
		r->stats.partial_by[cause]++;
		snprintf(name, sizeof(name), "[partial: %s]", unwind_cause_name(cause));
		if ((id = recorder_marker(r, name)))
			r->ids[k++] = id;
	}
	if (flags & UNWIND_RECOVERED)
		r->stats.recovered++;
	r->stats.stacks++;
	r->stats.frames += n;
	return k;
}

int recorder_add(struct recorder *r, uint64_t key, const struct thread_image *img,
		 const int64_t *values, const struct profile_label_in *labels, size_t nlabels)
{
	size_t k;

	watchdog_progress();
	if (watchdog_cut()) {
		/* A stop was asked: what is still queued keeps its weight
		 * but is not unwound, so the profile is written in the grace. */
		r->stats.not_unwound++;
		r->nkids = 0;
		return recorder_marker_sample(r, NOT_UNWOUND, values, labels, nlabels);
	}
	k = recorder_walk(r, img);
	remember(r, key, k);
	r->last_n = k;
	return recorder_add_ids(r, r->ids, k, values, labels, nlabels);
}

uint64_t *recorder_stack_copy(struct recorder *r, const struct thread_image *img, uint32_t *n)
{
	uint64_t *v;
	size_t k;

	*n = 0;
	watchdog_progress();
	if (watchdog_cut()) {
		r->stats.not_unwound++;
		r->nkids = 0;
		r->ids[0] = recorder_marker(r, NOT_UNWOUND);
		k = r->ids[0] != 0;
	} else {
		k = recorder_walk(r, img);
	}
	if (!k || !(v = malloc(k * sizeof(*v))))
		return NULL;
	memcpy(v, r->ids, k * sizeof(*v));
	*n = (uint32_t)k;
	return v;
}

uint64_t recorder_marker_id(struct recorder *r, const char *marker)
{
	return recorder_marker(r, marker);
}

int recorder_add_ids(struct recorder *r, const uint64_t *ids, size_t n, const int64_t *values,
		     const struct profile_label_in *labels, size_t nlabels)
{
	if (profile_add_sample(r->prof, ids, n, values, labels, nlabels) < 0) {
		r->stats.failed++;
		return -1;
	}
	return 0;
}

void record_stats_add(struct record_stats *a, const struct record_stats *b)
{
	unsigned c;

	a->stacks += b->stacks;
	a->frames += b->frames;
	a->truncated += b->truncated;
	a->partial += b->partial;
	for (c = 0; c < UNWIND_NCAUSES; c++)
		a->partial_by[c] += b->partial_by[c];
	a->recovered += b->recovered;
	a->failed += b->failed;
	a->repeated += b->repeated;
	a->not_unwound += b->not_unwound;
	a->lines_addrs += b->lines_addrs;
	a->lines_found += b->lines_found;
	a->lines_cached += b->lines_cached;
	a->lines_dwarf += b->lines_dwarf;
	a->lines_objects += b->lines_objects;
	a->lines_ns += b->lines_ns;
	a->lines_cpu_ns += b->lines_cpu_ns;
}

const struct record_stats *recorder_stats(const struct recorder *r)
{
	return &r->stats;
}

struct profile *recorder_profile(struct recorder *r)
{
	return r->prof;
}

int recorder_marker_sample(struct recorder *r, const char *marker, const int64_t *values,
			   const struct profile_label_in *labels, size_t nlabels)
{
	uint64_t id = recorder_marker(r, marker);

	if (!id || profile_add_sample(r->prof, &id, 1, values, labels, nlabels) < 0) {
		r->stats.failed++;
		return -1;
	}
	return 0;
}

int recorder_add_pcs(struct recorder *r, const uint64_t *pcs, size_t n, int truncated,
		     const int64_t *values, const struct profile_label_in *labels, size_t nlabels)
{
	size_t i, k = 0;
	uint64_t id;

	if (n > r->max_depth)
		n = r->max_depth;
	for (i = 0; i < n; i++)
		if ((id = recorder_location(r, pcs[i], 0)))
			r->ids[k++] = id;
	if (truncated && (id = recorder_marker(r, "[truncated]")))
		r->ids[k++] = id;
	r->stats.stacks++;
	r->stats.frames += n;
	if (profile_add_sample(r->prof, r->ids, k, values, labels, nlabels) < 0) {
		r->stats.failed++;
		return -1;
	}
	return 0;
}

size_t recorder_stack_used(const struct recorder *r, unsigned region, int *overran,
			   int *complete)
{
	*complete = !(r->last_flags & (UNWIND_PARTIAL | UNWIND_TRUNCATED));
	return unwinder_stack_used(r->unw, region, overran);
}
