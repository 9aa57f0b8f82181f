/*
 * srclines.c — the source-lines pass after a capture (recorder_lines()):
 * each distinct address recorded gets its inline chain from the line
 * cache (unwind/linecache.h) when the object's build ID has it there,
 * else from the object's DWARF (unwind/debuginfo.h, dwlines.h), which is
 * then added to the cache; the cache is flushed at the end. An object
 * whose addresses are all cached has its debug file left unopened by
 * libdw: opening a large debug file (libc6-dbg's) costs a snapshot far
 * more than the cached pass.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attach/source/record.h"
#include "attach/source/record_int.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/watchdog.h"
#include "model/profile.h"
#include "unwind/debuginfo.h"
#include "unwind/demangle.h"
#include "unwind/dwlines.h"
#include "unwind/linecache.h"
#include "unwind/linetab.h"
#include "unwind/space.h"

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int open_obj(void *ctx)
{
	void **c = ctx;

	return space_open_obj(c[0], c[1]);
}

/* What recorder_lines() knows of each object, by space object index. */
struct lines_pass {
	struct debuginfo *di;
	struct linecache *lc;
	size_t nobj;
	struct dwlines **lines; /* its DWARF, looked up once per capture here, once per run in di */
	struct linetab **tabs;  /* its cached lines, by build ID */
	uint8_t *tried;         /* 1: lines looked for, 2: its table too */
	uint8_t *used;          /* some address of it got lines */
	size_t stopped;         /* addresses left without lines: a stop signal */
};

/* The DWARF of object o, NULL when it has none. */
static struct dwlines *obj_lines(struct recorder *r, struct lines_pass *p, struct space_obj *o)
{
	struct debuginfo_req q;
	enum debug_how how;
	void *ctx[2] = { r->space, o };

	if (p->tried[o->index] & 1)
		return p->lines[o->index];
	p->tried[o->index] |= 1;
	if (o->is_vdso || !o->img)
		return NULL;
	memset(&q, 0, sizeof(q));
	q.pid = r->pid;
	q.path = o->path;
	q.build_id = o->build_id;
	q.dev = o->dev;
	q.inode = o->inode;
	q.img = o->img;
	q.open_self = open_obj;
	q.ctx = ctx;
	p->lines[o->index] = debuginfo_lines(p->di, &q, &how);
	return p->lines[o->index];
}

/* The cached lines of object o (unwind/linecache.h), NULL when it is not cached. */
static struct linetab *obj_table(struct lines_pass *p, struct space_obj *o)
{
	if (!(p->tried[o->index] & 2)) {
		p->tried[o->index] |= 2;
		if (p->lc && !o->is_vdso && o->img)
			p->tabs[o->index] = linecache_table(p->lc, o->build_id, o->dev, o->inode);
	}
	return p->tabs[o->index];
}

/*
 * The inline chain at addr in o into f: from o's line cache when it has
 * addr, else from its DWARF (and then kept in the cache). Its length.
 */
static size_t chain_of(struct recorder *r, struct lines_pass *p, struct space_obj *o,
		       uint64_t addr, struct dwlines_frame *f)
{
	struct linetab *t = obj_table(p, o);
	struct dwlines *l;
	size_t n;

	if (t && linetab_get(t, addr - o->bias, f, DWLINES_MAX_FRAMES, &n)) {
		r->stats.lines_cached++;
		return n;
	}
	/*
	 * After a stop signal no object's DWARF is opened: one open can take
	 * longer than the watchdog's grace, and the profile would be lost.
	 */
	if (!(p->tried[o->index] & 1) && watchdog_stop_signal()) {
		p->stopped++;
		return 0;
	}
	if (!(l = obj_lines(r, p, o))) {
		p->stopped += watchdog_stop_signal() != 0; /* its query may have been the one cut */
		return 0;
	}
	n = dwlines_lookup(l, addr - o->bias, f, DWLINES_MAX_FRAMES);
	r->stats.lines_dwarf++;
	/* Kept only from a file the target could not have written (linecache.h); best effort. */
	if (t && linecache_trusted(l, o->build_id))
		linetab_put(t, addr - o->bias, f, n);
	return n;
}

/* Give location id at addr the inline chain f[0..n). 1 when it did. */
static int location_lines(struct recorder *r, struct space_obj *o, uint64_t addr, uint64_t id,
			  struct dwlines_frame *f, size_t n)
{
	struct profile_line pl[DWLINES_MAX_FRAMES];
	const char *sym;
	char readable[1024];
	size_t i;

	/*
	 * The out-of-line function keeps its symbol's name where it has one,
	 * as in a profile without lines (glibc's DWARF says __GI___poll where
	 * its symbol says poll); DWARF names the inlined frames, and the
	 * functions of stripped code.
	 */
	if (n && (sym = space_symbol(r->space, o, addr, NULL)))
		f[n - 1].name = sym;
	for (i = 0; i < n; i++) {
		if (!f[i].name[0])
			return 0; /* a frame without a name: keep the symbol's */
		pl[i].function_id = profile_intern_function(
			r->prof, demangle(f[i].name, readable, sizeof(readable)), f[i].name,
			f[i].file, f[i].start_line);
		pl[i].line = f[i].line;
		if (!pl[i].function_id)
			return 0;
	}
	return n && profile_location_set_lines(r->prof, id, pl, n) == 0;
}

void recorder_lines(struct recorder *r, struct debuginfo *di, struct linecache *lc)
{
	struct dwlines_frame f[DWLINES_MAX_FRAMES];
	struct lines_pass p;
	struct space_obj *o;
	size_t i, n;
	uint64_t t0 = clock_mono_ns(), c0 = thread_cpu_ns();

	if (!r || !di)
		return;
	memset(&p, 0, sizeof(p));
	p.di = di;
	p.lc = lc;
	space_objects(r->space, &p.nobj);
	p.lines = calloc(p.nobj + 1, sizeof(*p.lines));
	p.tabs = calloc(p.nobj + 1, sizeof(*p.tabs));
	p.tried = calloc(p.nobj + 1, 1);
	p.used = calloc(p.nobj + 1, 1);
	if (!p.lines || !p.tabs || !p.tried || !p.used)
		goto out;
	for (i = 0; i < r->locs.nslots; i++) {
		const struct u64map_slot *sl = &r->locs.slots[i];

		if (!sl->used || !(o = space_find(r->space, sl->key)) || o->index >= p.nobj)
			continue;
		watchdog_progress();
		if (watchdog_cut()) {
			p.stopped++; /* and the rest: counted once, as "some" */
			break;
		}
		r->stats.lines_addrs++;
		n = chain_of(r, &p, o, sl->key, f);
		if (location_lines(r, o, sl->key, sl->value, f, n)) {
			p.used[o->index] = 1;
			r->stats.lines_found++;
		}
	}
	for (i = 0; i < p.nobj; i++) {
		if (!p.used[i])
			continue;
		r->stats.lines_objects++;
		if (i < r->nmap_ids && r->map_ids[i])
			profile_mapping_set_flags(r->prof, r->map_ids[i], 1, 1, 1, 1);
	}
	linecache_flush(lc);
	if (p.stopped)
		note("stopped by a signal: source lines only from the line cache, and %zu or more "
		     "addresses without them",
		     p.stopped);
out:
	r->stats.lines_ns += clock_mono_ns() - t0;
	r->stats.lines_cpu_ns += thread_cpu_ns() - c0;
	free(p.lines);
	free(p.tabs);
	free(p.tried);
	free(p.used);
}
