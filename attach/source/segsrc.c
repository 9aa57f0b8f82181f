/*
 * segsrc.c — the segment source: profile types that come from libcprof.so's
 * segment (heap, allocs, threadcreate; the view in the request says which
 * buckets and values). No thread of the target is stopped or even traced:
 * the segment is copied with process_vm_readv, once, or twice around a
 * window (-d) to report the change, as Go's net/http/pprof does with
 * ?seconds=.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/uio.h>
#include <time.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/capture/target.h"
#include "attach/inject/inject.h"
#include "attach/source/capture.h"
#include "attach/source/children.h"
#include "attach/source/labelsrc.h"
#include "attach/source/record.h"
#include "attach/source/segread.h"
#include "attach/source/source.h"
#include "attach/source/views.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/vmread.h"
#include "model/profile.h"

/* source_shim_path() (source.h). */
void source_shim_path(char *out, size_t cap)
{
	static const char *const rel[] = { "libcprof.so", "../lib/libcprof.so" };
	char exe[PATH_MAX], p[PATH_MAX + 32], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t i;

	if (n > 0) {
		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(p, sizeof(p), "%s/%s", exe, rel[i]);
			if (realpath(p, out) && access(out, R_OK) == 0 && strlen(out) < cap)
				return;
		}
	}
	snprintf(out, cap, "/usr/local/lib/libcprof.so");
}

static int copy_segment(const struct target *t, uint64_t addr, uint64_t len,
			struct seg_copy *c)
{
	char why[256];
	int r;

	r = segment_copy(c, segment_read_process, (void *)(intptr_t)t->pid, addr, len, why,
			 sizeof(why));
	if (r == 0)
		return EXIT_OK;
	if (errno == EPERM || errno == EACCES) {
		target_attach_error(t, EPERM);
		return EXIT_ATTACH;
	}
	if (errno == ESRCH)
		return EXIT_GONE;
	error("cannot read the profile of %d (%s): %s", (int)t->pid, t->comm, why);
	return r == -2 ? EXIT_ATTACH : EXIT_INTERNAL;
}

/*
 * --inject: the reader's beat, written into the segment at every read and
 * every INJECT_BEAT_NS of a window, so that an injected shim whose reader
 * went quiet for SEG_INJECT_QUIET_NS (cprof-attach killed) disarms itself.
 */
#define INJECT_BEAT_NS 2000000000ull

static void inject_beat(const struct capture_req *q, pid_t pid, uint64_t addr)
{
	uint64_t now = clock_mono_ns();
	struct iovec l = { &now, sizeof(now) };
	struct iovec r = { (void *)(uintptr_t)(addr + offsetof(struct seg_header, reader_beat_ns)),
			   sizeof(now) };

	if (q->inject && addr)
		(void)process_vm_writev(pid, &l, 1, &r, 1, 0);
}

/* Whether the kind q asks for may be injected (the hint of the refusal). */
static int injectable(const struct capture_req *q)
{
	return !strcmp(q->what, "heap") || !strcmp(q->what, "allocs") ||
	       !strcmp(q->what, "mutex") || !strcmp(q->what, "block");
}

/* The profile says what it covers: since the injection, nothing before. */
static void inject_comment(const struct capture_req *q, struct profile *prof,
			   const struct seg_header *h)
{
	char when[64], line[256];
	time_t s;
	struct tm tm;

	if (!q->inject || !h || !h->inject_ns || !prof)
		return;
	s = (time_t)(h->inject_ns / 1000000000ull);
	gmtime_r(&s, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (q->what[0] == 'm' || q->what[0] == 'b')
		snprintf(line, sizeof(line), "lock waits since injection at %s; waits before are "
			 "not in it", when);
	else
		snprintf(line, sizeof(line), "allocations since injection at %s; blocks allocated "
			 "before are not in it", when);
	profile_add_comment(prof, line);
	if (!q->quiet)
		note("%s", line);
}

/* Copies s into out (cap bytes) with anything unprintable as '?': it comes from the target. */
static const char *printable(const char *s, char *out, size_t cap)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < cap; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = 0;
	return out;
}

/*
 * What the shim recorded about itself, one line each: the settings it
 * rejected (the default is in force), and sampled blocks its pool could
 * not hold.
 */
static void report_shim(const struct target *t, const struct seg_header *h)
{
	static const char *const problem[] = { "invalid", "not a number", "negative", "too large" };
	char name[64], value[64];
	uint32_t i;

	for (i = 0; i < h->nsettings && i < SEG_MAX_SETTINGS; i++) {
		const struct seg_setting *s = &h->settings[i];
		int rate = strcmp(s->name, "CPROF_SAMPLE_RATE") == 0;

		warning("%s=%s in %d is %s; %s %llu%s", printable(s->name, name, sizeof(name)),
			printable(s->value, value, sizeof(value)), (int)t->pid,
			problem[s->problem < 4 ? s->problem : 0], rate ? "sampling at" : "using",
			(unsigned long long)s->used, rate ? "" : " instead");
	}
	labelsrc_warn(NULL, h, t->pid, t->comm);
	if ((h->flags & SEG_FLAG_NO_POOL) && h->no_pool)
		warning("libcprof.so in %d has no pool (an address-space limit or strict overcommit): "
			"%llu sampled blocks cost their full page-aligned size in the program's heap",
			(int)t->pid, (unsigned long long)h->no_pool);
}

/* The "primitive" label's value for a BLOCK bucket's flags, or NULL (not said). */
static const char *seg_prim_name(uint32_t flags)
{
	static const char *const names[] = {
		[SEG_PRIM_MUTEX] = "mutex", [SEG_PRIM_RWLOCK] = "rwlock",
		[SEG_PRIM_COND] = "condvar", [SEG_PRIM_SEM] = "semaphore",
		[SEG_PRIM_JOIN] = "join",
	};
	uint32_t p = (flags & SEG_BUCKET_PRIM_MASK) >> SEG_BUCKET_PRIM_SHIFT;

	return p < sizeof(names) / sizeof(names[0]) ? names[p] : NULL;
}

/*
 * Add the buckets of now (minus base, when there is one) to rec, each
 * sample with the labels extra[0..nextra) after the view's own, then the
 * program's labels in force when the bucket's events were recorded.
 */
static int add_buckets(struct recorder *rec, const struct shim_view *view, int raw,
		       const struct seg_copy *now, const struct seg_copy *base,
		       const struct profile_label_in *extra, size_t nextra,
		       struct labelsrc_keys *keys)
{
	uint32_t want = view->bucket;
	struct profile_label_in l[4 + LABELSRC_MAX] = { { "bytes", NULL, 0, "bytes" } };
	uint64_t pcs[SEG_MAX_FRAMES];
	const char *pn;
	int64_t v[4];
	size_t i, j, nl, added = 0;

	for (i = 0; i < now->n; i++) {
		const struct seg_bucket *b = &now->b[i], *o;

		if (b->kind != want)
			continue;
		o = segment_base_of(base, i, b);
		if (!view->values(b, o, raw, v))
			continue;
		for (j = 0; j < b->nframes; j++)
			pcs[j] = b->frames[j] ? b->frames[j] - 1 : 0;
		nl = 0;
		if (view->bytes_label) {
			/* Like Go, an average object size as the "bytes" label. */
			l[0].num = b->alloc_samples ?
					   (int64_t)(b->alloc_sampled_bytes / b->alloc_samples) : 0;
			nl = 1;
		}
		for (j = 0; j < nextra && nl < 4; j++)
			l[nl++] = extra[j];
		/* What a block wait waited on: two with one (stripped) caller told apart. */
		if (want == SEG_KIND_BLOCK && nl < 4 && (pn = seg_prim_name(b->flags)))
			l[nl++] = (struct profile_label_in){ "primitive", pn, 0, NULL };
		nl += labelsrc_set(now, b->labels, l + nl, LABELSRC_MAX, keys);
		if (recorder_add_pcs(rec, pcs, b->nframes, b->flags & SEG_BUCKET_TRUNCATED, v, l,
				     nl) == 0)
			added++;
	}
	return (int)added;
}

/*
 * One process whose segment is read: the target, or with --children one
 * of its descendants (each has its own segment and its own memory map).
 */
struct member {
	struct target t;          /* pid and comm */
	uint64_t addr, len;
	int found;                /* segment_find(): 1 a segment, 2 no table yet, 0 no shim */
	int have_a, have_b;       /* copied at the start / at the window's end */
	struct seg_copy a, b;
};

#define MEMBERS_MAX (CHILDREN_MAX + 1)

struct members {
	struct member m[MEMBERS_MAX];
	int n;
	int without;              /* descendants without libcprof.so (or unreadable) */
};

static void members_release(struct members *ms)
{
	int i;

	for (i = 0; i < ms->n; i++) {
		segment_release(&ms->m[i].a);
		segment_release(&ms->m[i].b);
	}
	ms->n = 0;
}

/* Whether pid is already a member. */
static int members_has(const struct members *ms, pid_t pid)
{
	int i;

	for (i = 0; i < ms->n; i++)
		if (ms->m[i].t.pid == pid)
			return 1;
	return 0;
}

/*
 * Add root's descendants that are not members yet (their command from
 * /proc). Returns how many were added.
 */
static int members_adopt(struct members *ms, pid_t root)
{
	struct child_cpu *kids = calloc(CHILDREN_MAX, sizeof(*kids));
	int i, k, added = 0;

	if (!kids)
		return 0;
	k = children_cpu(root, kids, CHILDREN_MAX);
	for (i = 0; i < k && ms->n < MEMBERS_MAX; i++) {
		struct member *m;

		if (members_has(ms, kids[i].pid))
			continue;
		m = &ms->m[ms->n++];
		memset(m, 0, sizeof(*m));
		m->t.pid = kids[i].pid;
		snprintf(m->t.comm, sizeof(m->t.comm), "%s", kids[i].comm);
		added++;
	}
	free(kids);
	return added;
}

/*
 * A descendant's segment, first copy (into b when late: it came during the
 * window, so all it has counts). Never an error: one that cannot be read
 * is counted in ms->without.
 */
static void member_open(const struct shim_view *view, struct members *ms, struct member *m,
			int late)
{
	char why[256];

	m->found = segment_find(m->t.pid, &m->addr, &m->len);
	if (m->found != 1) {
		ms->without += m->found != 2;
		return;
	}
	if (segment_copy(late ? &m->b : &m->a, segment_read_process, (void *)(intptr_t)m->t.pid,
			 m->addr, m->len, why, sizeof(why)) < 0) {
		ms->without++;
		return;
	}
	if (late) {
		m->have_b = 1;
		return;
	}
	m->have_a = 1;
	report_shim(&m->t, &m->a.h);
	if (m->a.h.state == SEG_STATE_OFF ||
	    (view->enabled && !view->enabled(&m->a.h, why, sizeof(why)))) {
		m->have_a = 0;
		ms->without++;
	}
}

/*
 * --inject, before the first copy: a shim already armed is read as it is,
 * a preloaded one too (with a note); a dormant one is armed again; none is
 * loaded and armed. m->found is then the segment's. EXIT_OK or a code.
 */
static int inject_here(const struct capture_req *q, struct member *m)
{
	struct inject *in = q->inject;
	const struct target *t = q->t;
	char shim[PATH_MAX];
	uint64_t flags = injectable(q) && (q->what[0] == 'm' || q->what[0] == 'b') ? INJECT_LOCKS
										    : INJECT_HEAP;
	int code;

	if (m->found == 1) {
		struct seg_header h;

		if (vm_read(t->pid, m->addr, &h, sizeof(h)) < 0)
			return EXIT_OK; /* the copy says why */
		if (h.inject_state == SEG_INJECT_NONE && !h.inject_ns) {
			if (!in->preloaded)
				note("libcprof.so is preloaded in %d (%s): nothing to inject, the "
				     "capture reads it as it is", (int)t->pid, t->comm);
			in->preloaded = 1;
			return EXIT_OK;
		}
		if (h.inject_state == SEG_INJECT_ARMED)
			return EXIT_OK;
		if (h.inject_state == SEG_INJECT_EJECTED)
			note("libcprof.so in %d (%s) had disarmed itself (its reader went quiet); "
			     "armed again: a fresh window", (int)t->pid, t->comm);
	}
	if (!in->pid) {
		source_shim_path(shim, sizeof(shim));
		if ((code = inject_prepare(in, t->pid, shim, in->deadline_ms)) != EXIT_OK) {
			in->pid = 0;
			return code;
		}
	}
	if ((code = inject_load(in)) != EXIT_OK)
		return code;
	/* (uint64_t)-1: the target's CPROF_BLOCK_RATE / CPROF_MUTEX_FRACTION, or their defaults. */
	if ((code = inject_arm(in, flags, flags == INJECT_HEAP ? q->inject_rate : 0,
			       flags == INJECT_LOCKS ? UINT64_MAX : 0,
			       flags == INJECT_LOCKS ? UINT64_MAX : 0)) != EXIT_OK)
		return code;
	in->fresh = 1;
	note("libcprof.so %s %d (%s): recording from now on; the call stopped one thread "
	     "for %.0f us at most", in->loaded ? "injected into" : "armed again in", (int)t->pid,
	     t->comm, (double)in->stop_ns_max / 1e3);
	m->found = segment_find(t->pid, &m->addr, &m->len);
	if (m->found != 1) {
		error("cannot profile the %s of %d (%s): libcprof.so was armed but shows no "
		      "segment", q->what, (int)t->pid, t->comm);
		return EXIT_ATTACH;
	}
	return EXIT_OK;
}

/* The target's own segment, first copy: as without --children, its absence is an error. */
static int root_open(const struct capture_req *q, struct member *m, struct profile **out,
		     struct capture_report *rep)
{
	const struct target *t = q->t;
	struct seg_header none = { .sample_rate = SEG_DEFAULT_RATE };
	struct profile *prof;
	char shim[PATH_MAX], why[256];
	int code;

	m->t = *t;
	m->found = segment_find(t->pid, &m->addr, &m->len);
	if (q->inject && m->found >= 0 && (code = inject_here(q, m)) != EXIT_OK)
		return code;
	if (m->found < 0) {
		if (errno == EACCES || errno == EPERM) {
			target_attach_error(t, EPERM);
			return EXIT_ATTACH;
		}
		error("cannot attach to %d (%s): the process exited", (int)t->pid, t->comm);
		return EXIT_ATTACH;
	}
	if (m->found == 2 && !q->children) {
		/* Loaded, armed, nothing sampled yet: an empty profile says so truthfully. */
		note("%d (%s) has libcprof.so but no profile table yet: it makes one at its "
		     "first sample (or could not); the profile is empty",
		     (int)t->pid, t->comm);
		prof = profile_new();
		if (!prof || capture_declare(q, prof, q->view->period(&none)) < 0) {
			error("out of memory");
			profile_free(prof);
			return EXIT_INTERNAL;
		}
		rep->start_real_ns = clock_real_ns();
		profile_set_time(prof, (int64_t)rep->start_real_ns, 0);
		*out = prof;
		return -1; /* done: the empty profile */
	}
	if (m->found == 0 && !q->children) {
		source_shim_path(shim, sizeof(shim));
		if (target_secure_exec(t->pid) == 1)
			error("cannot profile the %s of %d (%s): libcprof.so is not loaded in it, and "
			      "LD_PRELOAD cannot load it: the process runs in secure-execution mode "
			      "(setuid, setgid or file capabilities), where the loader ignores LD_PRELOAD paths",
			      q->what, (int)t->pid, t->comm);
		else
			error("cannot profile the %s of %d (%s): libcprof.so is not loaded in it; "
			      "start it with LD_PRELOAD=%s%s",
			      q->what, (int)t->pid, t->comm, shim,
			      injectable(q) ? ", or load it into the running process with --inject"
					    : "");
		return EXIT_ATTACH;
	}
	if (m->found != 1)
		return EXIT_OK; /* --children: the descendants may have it */
	inject_beat(q, t->pid, m->addr);
	if ((code = copy_segment(t, m->addr, m->len, &m->a)) != EXIT_OK)
		return code;
	m->have_a = 1;
	if (q->inject && q->inject->fresh) {
		/*
		 * Armed by this capture: every count is since the arm, so the
		 * window's base is empty (a copy made a moment after the arm
		 * would take away what was allocated in between and freed later).
		 */
		m->a.n = 0;
		q->inject->fresh = 0;
	}
	report_shim(t, &m->a.h);
	if (m->a.h.state == SEG_STATE_OFF) {
		char note_text[sizeof(m->a.h.note)];

		error("cannot profile the %s of %d (%s): libcprof.so stays out of the way in it: %s",
		      q->what, (int)t->pid, t->comm,
		      printable(m->a.h.note, note_text, sizeof(note_text)));
		return EXIT_ATTACH;
	}
	if (q->view->enabled && !q->view->enabled(&m->a.h, why, sizeof(why))) {
		error("cannot profile the %s of %d (%s): %s", q->what, (int)t->pid, t->comm, why);
		return EXIT_ATTACH;
	}
	if (m->a.h.allocator[0]) {
		char alloc_text[sizeof(m->a.h.allocator)];

		note("libcprof.so in %d samples on top of %s", (int)t->pid,
		     printable(m->a.h.allocator, alloc_text, sizeof(alloc_text)));
	}
	if (m->a.h.inherited)
		note("%d (%s) inherited %llu stacks of live samples from %u at fork", (int)t->pid,
		     t->comm, (unsigned long long)m->a.h.inherited, m->a.h.parent_pid);
	return EXIT_OK;
}

/* The header that sets the profile's period: the first member with a copy. */
static const struct seg_header *members_header(const struct members *ms)
{
	int i;

	for (i = 0; i < ms->n; i++)
		if (ms->m[i].have_a || ms->m[i].have_b)
			return ms->m[i].have_a ? &ms->m[i].a.h : &ms->m[i].b.h;
	return NULL;
}

/*
 * Each member's buckets into prof, through a recorder of its own; rec0,
 * when not NULL, is the first member's, made before the window (its
 * address space read while the process lived). Frees rec0.
 */
static int members_record(const struct capture_req *q, struct members *ms, struct profile *prof,
			  struct capture_report *rep, struct recorder *rec0)
{
	struct profile_label_in l[2] = { { "pid", NULL, 0, NULL }, { "process", NULL, 0, NULL } };
	struct labelsrc_keys *keys = calloc(1, sizeof(*keys));
	struct recorder *rec;
	int i, added;

	for (i = 0; i < ms->n; i++) {
		struct member *m = &ms->m[i];
		const struct seg_copy *now = q->duration_given ? &m->b : &m->a;
		const struct seg_copy *base = q->duration_given && m->have_a ? &m->a : NULL;

		if (!(q->duration_given ? m->have_b : m->have_a))
			continue;
		rec = i == 0 && rec0 ? rec0 : recorder_new(prof, m->t.pid, SEG_MAX_FRAMES);
		if (i == 0)
			rec0 = NULL;
		if (!rec) {
			if (i > 0)
				continue; /* a descendant gone meanwhile */
			target_attach_error(&m->t, errno == ENOENT ? ESRCH : EPERM);
			recorder_free(rec0);
			free(keys);
			return EXIT_ATTACH;
		}
		if (keys) {
			/* Reserved keys: noted once per process and capture. */
			memset(keys, 0, sizeof(*keys));
			keys->pid = m->t.pid;
		}
		l[0].num = m->t.pid;
		l[1].str = m->t.comm[0] ? m->t.comm : "?";
		added = add_buckets(rec, q->view, q->raw, now, base, l, q->children ? 2 : 0,
				    q->quiet ? NULL : keys);
		recorder_lines(rec, q->debug, q->line_cache);
		record_stats_add(&rep->rec, recorder_stats(rec));
		rep->samples += (uint64_t)added;
		rep->seg_torn += m->a.torn + m->b.torn;
		rep->seg_dropped += now->h.dropped;
		if (q->view->off_warning && now->h.sample_rate == 0)
			warning("%d (%s) runs libcprof.so with sampling off (CPROF_SAMPLE_RATE=0)",
				(int)m->t.pid, m->t.comm);
		if (now->capped || now->sets_capped)
			warning("%llu stacks and %llu label sets of %d (%s) were not read: past "
				"cprof-attach's caps of %u stacks, %u frames (%u distinct), %u label "
				"sets a process and %zu MiB in all",
				(unsigned long long)now->capped, (unsigned long long)now->sets_capped,
				(int)m->t.pid, m->t.comm, SEGMENT_MAX_READ_BUCKETS,
				SEGMENT_MAX_READ_FRAMES, SEGMENT_MAX_READ_PCS, SEGMENT_MAX_READ_SETS,
				SEGMENT_MAX_HELD >> 20);
		if (now->h.dropped)
			warning("libcprof.so in %d dropped %llu samples: its table is full (raise "
				"CPROF_MAX_BUCKETS)",
				(int)m->t.pid, (unsigned long long)now->h.dropped);
		recorder_free(rec);
	}
	recorder_free(rec0);
	free(keys);
	return EXIT_OK;
}

#define REREAD_NS 250000000ull /* without a held segment, copy it this often during the window */

/* Copy m's segment into m->b, replacing an earlier copy only on success. 0 or -1. */
static int member_copy_b(struct member *m, segment_read_fn *read, void *ctx)
{
	struct seg_copy c;
	char why[256];

	memset(&c, 0, sizeof(c));
	if (segment_copy(&c, read, ctx, m->addr, m->len, why, sizeof(why)) < 0) {
		segment_release(&c);
		return -1;
	}
	segment_release(&m->b);
	m->b = c;
	m->have_b = 1;
	return 0;
}

/*
 * The window of the root member m: wait until the deadline, a stop signal
 * or its exit. Its segment is held (segment_hold) so that a process that
 * exits meanwhile (a compiler run, a job) still has its profile: what the
 * segment had at its exit, read after it. Where the segment cannot be held
 * (no CAP_SYS_ADMIN for map_files), it is copied every REREAD_NS, and the
 * last copy stands. Returns capture_wait()'s result; on exit, m->have_b
 * says whether a copy was had, and *age_ns how old it is (0: at the exit).
 */
static int window_wait(const struct capture_req *q, struct member *m, int *stop_signal,
		       uint64_t *age_ns)
{
	struct segment_held held = { -1, 0, 0 };
	uint64_t deadline = clock_mono_ns() + q->duration_ns, now, last = 0;
	int r, hold = 0;

	if (m->have_a)
		hold = segment_hold(&held, m->t.pid, m->addr, m->len) == 0;
	for (;;) {
		now = clock_mono_ns();
		uint64_t step = q->inject ? INJECT_BEAT_NS : REREAD_NS;

		r = capture_wait(m->t.pid, -1,
				 (hold && !q->inject) || !m->have_a || deadline - now <= step ? deadline
											 : now + step,
				 stop_signal);
		if (r != 0 || clock_mono_ns() >= deadline)
			break;
		inject_beat(q, m->t.pid, m->addr);
		if (hold)
			continue;
		if (member_copy_b(m, segment_read_process, (void *)(intptr_t)m->t.pid) == 0)
			last = clock_mono_ns();
	}
	if (r == 2) {
		*age_ns = 0;
		if (hold && member_copy_b(m, segment_read_held, &held) == 0)
			last = 0;
		else if (m->have_b)
			*age_ns = clock_mono_ns() - last;
	}
	segment_unhold(&held);
	return r;
}

/* --children: the descendants' segments too; refused when none has the shim. */
static int segment_family(const struct capture_req *q, struct members *ms,
			  struct capture_report *rep)
{
	const struct target *t = q->t;
	char shim[PATH_MAX];
	int i, found = 0;

	members_adopt(ms, t->pid);
	for (i = 1; i < ms->n; i++)
		member_open(q->view, ms, &ms->m[i], 0);
	for (i = 0; i < ms->n; i++)
		found += ms->m[i].found == 1 || ms->m[i].found == 2;
	if (!found) {
		source_shim_path(shim, sizeof(shim));
		error("cannot profile the %s of %d (%s) or its %d descendants: libcprof.so is "
		      "loaded in none of them; start it with LD_PRELOAD=%s",
		      q->what, (int)t->pid, t->comm, ms->n - 1, shim);
		return EXIT_ATTACH;
	}
	rep->processes = (uint64_t)ms->n;
	return EXIT_OK;
}

/*
 * -d: the window. The first member's address space is read now, while it
 * lives (cx's profile and *rec0): if it exits during the window, its
 * stacks are still named. Then the segments as they are at the end (or,
 * for a target that exited, its last copy: rep->gone).
 */
static int segment_window(const struct capture_req *q, struct members *ms, struct capture *cx,
			  struct recorder **rec0, struct capture_report *rep)
{
	const struct target *t = q->t;
	char shim[PATH_MAX];
	uint64_t age = 0;
	int i, r, code;

	if (ms->m[0].have_a) {
		if ((code = capture_profile(cx, q->view->period(&ms->m[0].a.h))) != EXIT_OK)
			return code;
		*rec0 = recorder_new(cx->prof, t->pid, SEG_MAX_FRAMES);
	}
	note("profiling %d (%s)%s: %s %s during the next %.3gs", (int)t->pid, t->comm,
	     q->children ? " and its descendants" : "", q->what, q->view->window,
	     (double)q->duration_ns / 1e9);
	r = window_wait(q, &ms->m[0], &rep->stop_signal, &age);
	if (r == 2 && !ms->m[0].have_b) {
		error("%d (%s) exited during the window; what it %s over it is lost (its "
		      "segment could not be held: that takes root)",
		      (int)t->pid, t->comm, q->view->window);
		return EXIT_GONE;
	}
	if (r == 2) {
		/* What its segment had at the exit (or at the last copy): written, exit 5. */
		rep->gone = 1;
		if (age)
			note("%d (%s) exited; its profile is the last copy of its segment, %.0f ms "
			     "before the exit", (int)t->pid, t->comm, (double)age / 1e6);
	} else {
		segment_release(&ms->m[0].b); /* a copy made during the window, if any */
		memset(&ms->m[0].b, 0, sizeof(ms->m[0].b));
		ms->m[0].have_b = 0;
		inject_beat(q, t->pid, ms->m[0].addr);
		if (ms->m[0].have_a &&
		    (code = copy_segment(t, ms->m[0].addr, ms->m[0].len, &ms->m[0].b)) != EXIT_OK)
			return code;
		ms->m[0].have_b = ms->m[0].have_a;
	}
	for (i = 1; i < ms->n; i++)
		if (ms->m[i].have_a)
			ms->m[i].have_b = segment_copy(&ms->m[i].b, segment_read_process,
						       (void *)(intptr_t)ms->m[i].t.pid, ms->m[i].addr,
						       ms->m[i].len, shim, sizeof(shim)) == 0;
	if (q->children) {
		/* Born during the window: everything they have counts. */
		for (i = ms->n, members_adopt(ms, t->pid); i < ms->n; i++)
			member_open(q->view, ms, &ms->m[i], 1);
		rep->processes = (uint64_t)ms->n;
	}
	return EXIT_OK;
}

static int capture_segment(const struct capture_req *q, struct profile **out,
			   struct capture_report *rep)
{
	const struct target *t = q->t;
	struct members *ms = calloc(1, sizeof(*ms));
	struct seg_header none = { .sample_rate = SEG_DEFAULT_RATE };
	const struct seg_header *h;
	struct recorder *rec0 = NULL;
	struct capture cx;
	uint64_t t0;
	int code;

	capture_open(&cx, q, rep, out);
	if (!ms) {
		error("out of memory");
		return EXIT_INTERNAL;
	}
	rep->start_real_ns = clock_real_ns();
	t0 = clock_mono_ns();
	ms->n = 1;
	code = root_open(q, &ms->m[0], out, rep);
	if (code < 0) {
		code = EXIT_OK; /* the empty profile of a shim with no table yet */
		rep->cpu_self_s = capture_self_cpu();
		goto out;
	}
	if (code != EXIT_OK || (q->children && (code = segment_family(q, ms, rep)) != EXIT_OK) ||
	    (q->duration_given && (code = segment_window(q, ms, &cx, &rec0, rep)) != EXIT_OK))
		goto err;
	h = members_header(ms);
	if (!cx.prof && (code = capture_profile(&cx, q->view->period(h ? h : &none))) != EXIT_OK)
		goto err;
	inject_comment(q, cx.prof, h);
	code = members_record(q, ms, cx.prof, rep, rec0);
	rec0 = NULL;
	if (code != EXIT_OK)
		goto err;
	if (q->children && ms->without)
		note("%d of %d descendants of %d have no libcprof.so (or could not be read): "
		     "their heap is not in the profile",
		     ms->without, ms->n - 1, (int)t->pid);
	rep->duration_ns = q->duration_given ? clock_mono_ns() - t0 : 0;
	code = capture_close(&cx, t->pid, t->comm, 0, out);
	goto out;
err:
	if (code == EXIT_GONE && !rep->samples)
		error("%d (%s) exited before its profile could be read", (int)t->pid, t->comm);
	recorder_free(rec0);
out:
	capture_release(&cx);
	members_release(ms);
	free(ms);
	return code;
}

const struct source source_segment = {
	.name = "segment",
	.capture = capture_segment,
	.can = SOURCE_CHILDREN,
};
