/*
 * segread.c — find the shim's segment in /proc/PID/maps and copy it out
 * with process_vm_readv: the header first (validated), then all published
 * buckets in one read, then a second look at any bucket whose sequence
 * lock was odd or whose seq and seq_end disagree. Buckets are append-only
 * and their counters change under a per-bucket lock, so one bulk read is
 * consistent for nearly every bucket; the rare torn one costs one more
 * small read. Also what the block and mutex buckets (layout 3) say, and
 * whether the target records them; and the label tables (layout 4): the
 * sets, immutable once published, in one read; the slots, each under its
 * sequence lock like a bucket.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach/source/segread.h"
#include "common/troot.h"
#include "common/vmread.h"
#include "unwind/maps.h"

int segment_read_process(void *ctx, uint64_t addr, void *buf, size_t n)
{
	return vm_read_bounded((pid_t)(intptr_t)ctx, addr, buf, n);
}

int segment_hold(struct segment_held *h, pid_t pid, uint64_t addr, uint64_t len)
{
	char p[96];
	const char *why = NULL;
	struct stat st;
	int mf;

	h->fd = -1;
	h->start = addr;
	h->len = len;
	snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)addr,
		 (unsigned long long)(addr + len));
	/* The type checked before any open for reading: a device the target mapped is never opened. */
	mf = open(p, O_PATH | O_CLOEXEC);
	if (mf < 0)
		return -1;
	h->fd = troot_reopen(mf, &why);
	close(mf);
	if (h->fd < 0)
		return -1;
	if (fstat(h->fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < len) {
		segment_unhold(h);
		return -1;
	}
	return 0;
}

void segment_unhold(struct segment_held *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
}

int segment_read_held(void *ctx, uint64_t addr, void *buf, size_t n)
{
	const struct segment_held *h = ctx;
	size_t got = 0;
	ssize_t r;

	if (h->fd < 0 || addr < h->start || addr - h->start > h->len || n > h->len - (addr - h->start)) {
		errno = EFAULT;
		return -1;
	}
	while (got < n) {
		r = pread(h->fd, (char *)buf + got, n - got, (off_t)(addr - h->start + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			errno = EFAULT; /* shrunk under us: the target's own doing */
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

int segment_find(pid_t pid, uint64_t *addr, uint64_t *len)
{
	static const char name[] = "/memfd:" SEG_NAME, lib[] = "/libcprof.so";
	struct maps m;
	size_t i, n;
	int found = 0;

	maps_init(&m);
	if (maps_read(&m, pid) < 0)
		return -1;
	for (i = 0; i < m.n; i++) {
		const struct map_entry *e = &m.v[i];

		n = strlen(e->path);
		if (!found && n >= sizeof(lib) - 1 && strcmp(e->path + n - (sizeof(lib) - 1), lib) == 0)
			found = 2; /* the shim is there; its segment may not be yet */
		if (strncmp(e->path, name, sizeof(name) - 1) != 0 || e->offset != 0)
			continue;
		/* The shim maps its segment once; a later one (after exec) wins. */
		*addr = e->start;
		*len = e->end - e->start;
		found = 1;
	}
	maps_release(&m);
	return found;
}

static int bucket_whole(const struct seg_bucket *b)
{
	return b->seq == b->seq_end && !(b->seq & 1);
}

static int estimate_ok(double v)
{
	return isfinite(v) && v >= 0;
}

static int bucket_valid(const struct seg_bucket *b, uint32_t max_frames)
{
	const struct seg_wait *w = &b->wait;

	if (b->nframes > max_frames)
		return 0;
	switch (b->kind) {
	case SEG_KIND_ALLOC:
	case SEG_KIND_THREAD:
		return 1;
	case SEG_KIND_BLOCK:
	case SEG_KIND_MUTEX:
		return w->reserved[0] == 0 && w->reserved[1] == 0 && w->reserved_d[0] == 0 &&
		       w->reserved_d[1] == 0 && estimate_ok(w->contentions) &&
		       estimate_ok(w->delay_ns);
	default:
		return 0;
	}
}

/*
 * Every copy's tables are charged here while held (c->held): together at
 * most SEGMENT_MAX_HELD bytes, whatever the segments claim and however
 * many processes are read (--children, -d's two copies).
 */
static size_t segment_held;

/* Charges n more bytes to c; 0, or -1 when that would pass SEGMENT_MAX_HELD. */
static int segment_charge(struct seg_copy *c, size_t n)
{
	size_t cur = __atomic_load_n(&segment_held, __ATOMIC_RELAXED);

	do {
		if (n > SEGMENT_MAX_HELD - cur)
			return -1;
	} while (!__atomic_compare_exchange_n(&segment_held, &cur, cur + n, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	c->held += n;
	return 0;
}

static void segment_uncharge(struct seg_copy *c, size_t n)
{
	if (n > c->held)
		n = c->held;
	__atomic_sub_fetch(&segment_held, n, __ATOMIC_RELAXED);
	c->held -= n;
}

/* n bytes of from's charge become to's (tables handed over; the total is unchanged). */
static void segment_move_charge(struct seg_copy *from, struct seg_copy *to, size_t n)
{
	if (n > from->held)
		n = from->held;
	from->held -= n;
	to->held += n;
}

size_t segment_held_bytes(void)
{
	return __atomic_load_n(&segment_held, __ATOMIC_RELAXED);
}

/* A table of cap entries of size bytes at off lies inside a segment of seg bytes. */
static int table_fits(uint64_t off, uint64_t cap, uint64_t size, uint64_t seg)
{
	return off >= SEG_HEADER_V3_SIZE && off <= seg && cap <= SEGMENT_MAX_LABEL_ROWS &&
	       cap <= (seg - off) / size;
}

/*
 * The header, checked: 0, -1 or -2 (another layout) with why. A layout-3
 * header is shorter: what it lacks reads as 0 (no label tables).
 */
static int copy_header(struct seg_copy *c, segment_read_fn *read, void *ctx, uint64_t addr,
		       uint64_t len, char *why, size_t cap)
{
	struct seg_header *h = &c->h;
	uint64_t i;
	size_t want;

	memset(c, 0, sizeof(*c));
	if (len < SEG_HEADER_V3_SIZE || read(ctx, addr, h, SEG_HEADER_V3_SIZE) < 0) {
		snprintf(why, cap, "the segment is too small or unreadable");
		return -1;
	}
	if (memcmp(h->magic, SEG_MAGIC, 8) != 0) {
		snprintf(why, cap, "the segment has no cprof header");
		return -1;
	}
	if (h->version < SEG_VERSION_MIN || h->version > SEG_VERSION) {
		snprintf(why, cap,
			 "its libcprof.so writes segment layout version %u, this cprof-attach reads "
			 "versions %u to %u; use the cprof-attach that came with that libcprof.so",
			 h->version, SEG_VERSION_MIN, SEG_VERSION);
		return -2;
	}
	want = h->version >= 4 ? sizeof(*h) : SEG_HEADER_V3_SIZE;
	if (want > SEG_HEADER_V3_SIZE &&
	    (len < want || read(ctx, addr, h, want) < 0 || h->version < 4)) {
		snprintf(why, cap, "the segment is too small or unreadable");
		return -1;
	}
	/* Strings from the target: always terminated in our copy. */
	if (h->nsettings > SEG_MAX_SETTINGS)
		h->nsettings = SEG_MAX_SETTINGS;
	for (i = 0; i < SEG_MAX_SETTINGS; i++) {
		h->settings[i].name[sizeof(h->settings[i].name) - 1] = 0;
		h->settings[i].value[sizeof(h->settings[i].value) - 1] = 0;
	}
	h->allocator[sizeof(h->allocator) - 1] = 0;
	h->note[sizeof(h->note) - 1] = 0;
	if (h->header_size != want || h->bucket_size != sizeof(struct seg_bucket) ||
	    h->max_frames == 0 || h->max_frames > SEG_MAX_FRAMES || h->size > len ||
	    h->bucket_off < want || h->bucket_off > h->size ||
	    h->bucket_cap > SEG_MAX_BUCKETS ||
	    h->bucket_cap > (h->size - h->bucket_off) / sizeof(struct seg_bucket) ||
	    (h->version >= 4 &&
	     (h->labelset_size != sizeof(struct seg_labelset) ||
	      h->lslot_size != sizeof(struct seg_lslot) ||
	      !table_fits(h->labelset_off, h->labelset_cap, sizeof(struct seg_labelset), h->size) ||
	      !table_fits(h->lslot_off, h->lslot_cap, sizeof(struct seg_lslot), h->size)))) {
		snprintf(why, cap, "the segment header is inconsistent");
		return -1;
	}
	return 0;
}

/*
 * The label sets published now (the count read afresh: sets only grow,
 * and every one a bucket or slot already copied names is in). Sets are
 * immutable once published: one read, no lock.
 */
static int copy_sets(struct seg_copy *c, segment_read_fn *read, void *ctx, uint64_t addr,
		     struct seg_copy *prev, char *why, size_t cap)
{
	const struct seg_header *h = &c->h;
	uint64_t count, i, have = 0;
	struct seg_labelset *v;
	uint32_t k;

	if (h->version < 4 || !h->labelset_cap)
		return 0;
	if (read(ctx, addr + offsetof(struct seg_header, labelset_count), &count,
		 sizeof(count)) < 0)
		count = h->labelset_count;
	if (count > h->labelset_cap)
		count = h->labelset_cap;
	if (count > SEGMENT_MAX_READ_SETS) {
		c->sets_capped = count - SEGMENT_MAX_READ_SETS; /* their buckets are left out */
		count = SEGMENT_MAX_READ_SETS;
	}
	c->h.labelset_count = count;
	if (prev && prev->sets && prev->nsets <= count) {
		c->sets = prev->sets; /* taken over: published sets never change */
		have = prev->nsets;
		prev->sets = NULL;
		prev->nsets = 0;
		segment_move_charge(prev, c, have * sizeof(*v));
	}
	c->nsets = have;
	if (count == have)
		return 0;
	if (segment_charge(c, (count - have) * sizeof(*v)) < 0) {
		c->sets_capped += count - have;
		c->h.labelset_count = count = have;
		return 0;
	}
	v = realloc(c->sets, count * sizeof(*c->sets));
	if (!v || read(ctx, addr + h->labelset_off + have * sizeof(*v), v + have,
		       (count - have) * sizeof(*v)) < 0) {
		if (v)
			c->sets = v;
		snprintf(why, cap, v ? "the segment's label sets are unreadable" : "out of memory");
		if (prev && have) {
			/* prev stays the last good copy: give its sets back. */
			prev->sets = c->sets;
			prev->nsets = have;
			c->sets = NULL;
			c->nsets = 0;
			segment_move_charge(c, prev, have * sizeof(*v));
		}
		return -1;
	}
	c->sets = v;
	for (i = have; i < count; i++) {
		struct seg_labelset *s = &v[i];

		if (s->n > SEG_LABEL_PAIRS) {
			memset(s, 0, sizeof(*s));
			c->sets_invalid++;
		}
		for (k = 0; k < SEG_LABEL_PAIRS; k++) {
			s->pair[k].key[sizeof(s->pair[k].key) - 1] = 0;
			s->pair[k].value[sizeof(s->pair[k].value) - 1] = 0;
		}
	}
	c->nsets = count;
	return 0;
}

static int slot_whole(const struct seg_lslot *s)
{
	return s->seq == s->seq_end && !(s->seq & 1);
}

/* Whether prev saw slot i with this owner and change count: nothing new in it. */
static int slot_unchanged(const struct seg_copy *prev, uint64_t i, const struct seg_lslot *head)
{
	return prev && i < prev->nseen && prev->seen[i].tid == head->tid &&
	       prev->seen[i].changes == head->changes;
}

/*
 * The slots ever claimed, each whole (a few reads) or left out and
 * counted; with prev, only those whose owner or change count moved since
 * (segment_copy_slots()).
 */
static int copy_slots(struct seg_copy *c, segment_read_fn *read, void *ctx, uint64_t addr,
		      const struct seg_copy *prev, char *why, size_t cap)
{
	const struct seg_header *h = &c->h;
	uint64_t count = h->lslot_count, i, seq, off;
	size_t k = 0, head = offsetof(struct seg_lslot, cur);
	int tries;

	if (h->version < 4 || !h->lslot_cap)
		return 0;
	if (count > h->lslot_cap)
		count = h->lslot_cap;
	if (count > SEGMENT_MAX_READ_SLOTS) {
		c->slots_capped = count - SEGMENT_MAX_READ_SLOTS;
		count = SEGMENT_MAX_READ_SLOTS;
	}
	if (!count)
		return 0;
	if (segment_charge(c, count * (sizeof(*c->slots) + sizeof(*c->seen))) < 0) {
		c->slots_capped += count;
		return 0;
	}
	c->slots = malloc(count * sizeof(*c->slots));
	c->seen = calloc(count, sizeof(*c->seen));
	if (!c->slots || !c->seen) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	c->nseen = count;
	/* Without prev, every slot is read: one read of them all. */
	if (!prev && read(ctx, addr + h->lslot_off, c->slots, count * sizeof(*c->slots)) < 0) {
		snprintf(why, cap, "the segment's label slots are unreadable");
		return -1;
	}
	for (i = 0; i < count; i++) {
		struct seg_lslot *s = &c->slots[k];

		off = addr + h->lslot_off + i * sizeof(*s);
		if (prev) {
			if (read(ctx, off, s, head) < 0) {
				snprintf(why, cap, "the segment's label slots are unreadable");
				return -1;
			}
			if (slot_unchanged(prev, i, s)) {
				c->seen[i] = prev->seen[i];
				continue;
			}
			if (read(ctx, off, s, sizeof(*s)) < 0) {
				snprintf(why, cap, "the segment's label slots are unreadable");
				return -1;
			}
		} else if (k != i) {
			*s = c->slots[i];
		}
		/* A second look at seq: the copy is whole only if it did not move meanwhile. */
		for (tries = 0; tries <= SEGMENT_RETRIES; tries++) {
			if (read(ctx, off, &seq, sizeof(seq)) < 0)
				break;
			if (slot_whole(s) && s->seq == seq)
				break;
			if (tries == SEGMENT_RETRIES || read(ctx, off, s, sizeof(*s)) < 0) {
				tries = SEGMENT_RETRIES + 1;
				break;
			}
		}
		if (tries > SEGMENT_RETRIES || !slot_whole(s) || s->state > SEG_LSLOT_EXITED) {
			c->slots_torn++; /* seen[i] stays empty: read again next time */
			continue;
		}
		c->seen[i].tid = s->tid;
		c->seen[i].changes = s->changes;
		k++;
	}
	c->nslots = k;
	return 0;
}

/* Whether prev is a copy of the same segment as c's header says. */
static int same_segment(const struct seg_copy *c, const struct seg_copy *prev)
{
	return prev && prev->h.pid == c->h.pid && prev->h.created_ns == c->h.created_ns &&
	       prev->h.version == c->h.version && prev->h.lslot_off == c->h.lslot_off &&
	       prev->h.labelset_off == c->h.labelset_off;
}

int segment_copy_slots(struct seg_copy *c, segment_read_fn *read, void *ctx, uint64_t addr,
		       uint64_t len, struct seg_copy *prev, char *why, size_t cap)
{
	int r = copy_header(c, read, ctx, addr, len, why, cap);

	if (r < 0)
		return r;
	if (!same_segment(c, prev))
		prev = NULL;
	if (copy_slots(c, read, ctx, addr, prev, why, cap) < 0 ||
	    copy_sets(c, read, ctx, addr, prev, why, cap) < 0) {
		segment_release(c);
		return -1;
	}
	return 0;
}

/*
 * Makes room in c->b for one more bucket, growing it (charged) up to
 * want; 0, or -1 when the budget or memory says no.
 */
static int bucket_room(struct seg_copy *c, size_t *room, size_t want)
{
	struct seg_bucket *v;
	size_t n;

	if (c->n < *room)
		return 0;
	n = *room ? *room * 2 : 1024;
	if (n > want)
		n = want;
	if (n <= *room || segment_charge(c, (n - *room) * sizeof(*v)) < 0)
		return -1;
	if (!(v = realloc(c->b, n * sizeof(*v)))) {
		segment_uncharge(c, (n - *room) * sizeof(*v));
		return -1;
	}
	c->b = v;
	*room = n;
	return 0;
}

/*
 * Bucket i (whose first copy is *b, and whose seq a second copy gave as
 * seq) made whole: read again a few times while its lock says it
 * changed. 1 whole, 0 torn.
 */
static int bucket_settle(segment_read_fn *read, void *ctx, uint64_t boff, uint64_t i,
			 struct seg_bucket *b, uint64_t seq)
{
	int tries;

	for (tries = 0; !bucket_whole(b) || b->seq != seq; tries++) {
		if (tries == SEGMENT_RETRIES || read(ctx, boff + i * sizeof(*b), b, sizeof(*b)) < 0 ||
		    read(ctx, boff + i * sizeof(*b), &seq, sizeof(seq)) < 0)
			break;
	}
	return bucket_whole(b) && b->seq == seq;
}

/*
 * The distinct (process, return address) pairs of the buckets of every
 * copy held now (what a profile's size follows: its locations are per
 * process): an open-addressing set of at most SEGMENT_MAX_HELD_PCS pairs,
 * at most half full, shared by all copies so that --children's processes
 * share one budget, while -d's two copies of one process (the same read
 * context) count an address once. Emptied when no copy with buckets is
 * held: a series' next capture starts afresh.
 */
struct pc_set {
	uint64_t *pc;  /* 2 * SEGMENT_MAX_HELD_PCS slots; 0 empty (a pc of 0 is not kept) */
	uintptr_t *who; /* the read context (the process) of each */
	size_t n;
};

#define PC_SLOTS (2 * (size_t)SEGMENT_MAX_HELD_PCS)

static struct pc_set segment_pcs;
static size_t segment_pc_users;  /* copies holding buckets (pc_ref set) */
static pthread_mutex_t segment_pcs_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Adds b's frames, read from who, to the set; *added counts the pairs new
 * to it. 0, or -1 (the set keeps those already put) when they would pass
 * SEGMENT_MAX_HELD_PCS in all or SEGMENT_MAX_READ_PCS for this copy, or
 * memory is short.
 */
static int pc_add(struct pc_set *p, uintptr_t who, const struct seg_bucket *b, size_t *added)
{
	const size_t mask = PC_SLOTS - 1;
	uint64_t pc, k;
	uint32_t i;
	size_t j;

	if (!p->pc) {
		p->pc = calloc(PC_SLOTS, sizeof(*p->pc));
		p->who = calloc(PC_SLOTS, sizeof(*p->who));
		if (!p->pc || !p->who) {
			free(p->pc);
			free(p->who);
			p->pc = NULL;
			p->who = NULL;
			return -1;
		}
	}
	for (i = 0; i < b->nframes; i++) {
		if (!(pc = b->frames[i]))
			continue;
		k = (pc ^ (uint64_t)who * 0xBF58476D1CE4E5B9ull) * 0x9E3779B97F4A7C15ull;
		for (j = (size_t)(k >> 40) & mask; p->pc[j] && (p->pc[j] != pc || p->who[j] != who);
		     j = (j + 1) & mask)
			;
		if (p->pc[j])
			continue;
		if (p->n == SEGMENT_MAX_HELD_PCS || *added == SEGMENT_MAX_READ_PCS)
			return -1;
		p->pc[j] = pc;
		p->who[j] = who;
		p->n++;
		(*added)++;
	}
	return 0;
}

static int pc_add_locked(struct pc_set *p, uintptr_t who, const struct seg_bucket *b,
			 size_t *added)
{
	int r;

	pthread_mutex_lock(&segment_pcs_lock);
	r = pc_add(p, who, b, added);
	pthread_mutex_unlock(&segment_pcs_lock);
	return r;
}

int segment_copy(struct seg_copy *c, segment_read_fn *read, void *ctx, uint64_t addr,
		 uint64_t len, char *why, size_t cap)
{
	struct pc_set *pcs = &segment_pcs;
	struct seg_header *h = &c->h;
	struct seg_bucket *chunk = NULL, *again = NULL;
	uint64_t count, boff, i, j, n, frames = 0;
	size_t room = 0, want, added = 0;
	int r;

	if ((r = copy_header(c, read, ctx, addr, len, why, cap)) < 0)
		return r;
	count = h->bucket_count;
	if (count > h->bucket_cap)
		count = h->bucket_cap; /* never trust a count past the table */
	want = count < SEGMENT_MAX_READ_BUCKETS ? (size_t)count : SEGMENT_MAX_READ_BUCKETS;
	if (!count)
		goto sets;
	chunk = malloc(SEGMENT_CHUNK * sizeof(*chunk));
	again = malloc(SEGMENT_CHUNK * sizeof(*again));
	if (!chunk || !again) {
		snprintf(why, cap, "out of memory");
		goto err;
	}
	boff = addr + h->bucket_off;
	pthread_mutex_lock(&segment_pcs_lock);
	if (!segment_pc_users && pcs->n) {
		memset(pcs->pc, 0, PC_SLOTS * sizeof(*pcs->pc));
		pcs->n = 0;
	}
	segment_pc_users++;
	c->pc_ref = 1;
	pthread_mutex_unlock(&segment_pcs_lock);
	/*
	 * A chunk at a time, read twice: a bucket whose seq moved between the
	 * two copies (or was odd, or disagreed with seq_end) was written while
	 * we copied it, whatever order the kernel copied in. Only the buckets
	 * kept are held; past a cap the rest are not read (counted in capped).
	 */
	for (i = 0; i < count; i += n) {
		n = count - i < SEGMENT_CHUNK ? count - i : SEGMENT_CHUNK;
		if (read(ctx, boff + i * sizeof(*chunk), chunk, n * sizeof(*chunk)) < 0 ||
		    read(ctx, boff + i * sizeof(*chunk), again, n * sizeof(*again)) < 0) {
			snprintf(why, cap, "the segment's buckets are unreadable");
			goto err;
		}
		for (j = 0; j < n; j++) {
			struct seg_bucket *b = &chunk[j];

			if (!bucket_settle(read, ctx, boff, i + j, b, again[j].seq)) {
				c->torn++;
				continue;
			}
			if (h->version < 4)
				b->labels = 0; /* layout 3's reserved word */
			if (!bucket_valid(b, h->max_frames)) {
				c->invalid++;
				continue;
			}
			if (c->n == want || frames + b->nframes > SEGMENT_MAX_READ_FRAMES ||
			    pc_add_locked(pcs, (uintptr_t)ctx, b, &added) < 0 || bucket_room(c, &room, want) < 0) {
				c->capped = count - (i + j);
				goto done;
			}
			frames += b->nframes;
			c->b[c->n++] = *b;
		}
	}
done:
	free(chunk);
	free(again);
	chunk = again = NULL;
sets:
	/* The sets after the buckets: every set a copied bucket names is in. */
	if (copy_sets(c, read, ctx, addr, NULL, why, cap) < 0)
		goto err;
	for (i = 0, j = 0; i < c->n; i++) {
		if (c->b[i].labels > c->nsets) {
			c->invalid++;
			continue;
		}
		c->b[j++] = c->b[i];
	}
	c->n = j;
	return 0;
err:
	free(chunk);
	free(again);
	segment_release(c);
	return -1;
}

void segment_release(struct seg_copy *c)
{
	segment_uncharge(c, c->held);
	if (c->pc_ref) {
		pthread_mutex_lock(&segment_pcs_lock);
		segment_pc_users--;
		pthread_mutex_unlock(&segment_pcs_lock);
		c->pc_ref = 0;
	}
	free(c->b);
	free(c->sets);
	free(c->slots);
	free(c->seen);
	c->b = NULL;
	c->sets = NULL;
	c->slots = NULL;
	c->seen = NULL;
	c->n = c->nsets = c->nslots = c->nseen = 0;
}

const struct seg_labelset *segment_labelset(const struct seg_copy *c, uint32_t id)
{
	if (id == 0 || id > c->nsets || c->sets[id - 1].n == 0)
		return NULL;
	return &c->sets[id - 1];
}

const char *segment_kind_name(uint32_t kind)
{
	static const char *const names[] = { NULL, "alloc", "thread", "block", "mutex" };

	return kind <= SEG_KIND_MAX ? names[kind] : NULL;
}

static int same_stack(const struct seg_bucket *o, const struct seg_bucket *b)
{
	return o->hash == b->hash && o->kind == b->kind && o->flags == b->flags &&
	       o->labels == b->labels && o->nframes == b->nframes && !memcmp(o->frames, b->frames, b->nframes * 8);
}

const struct seg_bucket *segment_base_of(const struct seg_copy *base, size_t i,
					 const struct seg_bucket *b)
{
	size_t d;

	if (base == NULL)
		return NULL;
	/* Nearest first: torn buckets left out of either copy shift the rest by a few. */
	for (d = 0; d <= 64; d++) {
		if (i >= d && i - d < base->n && same_stack(&base->b[i - d], b))
			return &base->b[i - d];
		if (d > 0 && i + d < base->n && same_stack(&base->b[i + d], b))
			return &base->b[i + d];
	}
	return NULL;
}

void segment_wait_values(const struct seg_bucket *b, const struct seg_bucket *base,
			 struct segment_wait *v)
{
	const struct seg_wait *w = &b->wait, *o = base ? &base->wait : NULL;

	v->contentions = w->contentions;
	v->delay_ns = w->delay_ns;
	v->events = w->events;
	v->event_ns = w->event_ns;
	if (o == NULL)
		return;
	v->contentions = v->contentions > o->contentions ? v->contentions - o->contentions : 0;
	v->delay_ns = v->delay_ns > o->delay_ns ? v->delay_ns - o->delay_ns : 0;
	v->events = v->events > o->events ? v->events - o->events : 0;
	v->event_ns = v->event_ns > o->event_ns ? v->event_ns - o->event_ns : 0;
}

int segment_wait_enabled(const struct seg_header *h, uint32_t kind, char *why, size_t cap)
{
	if (kind == SEG_KIND_BLOCK && h->block_rate == 0) {
		snprintf(why, cap, "the block profile is off in it: start it with CPROF_BLOCK_RATE "
			 "set to a duration, e.g. CPROF_BLOCK_RATE=10us (not 0)");
		return 0;
	}
	if (kind == SEG_KIND_MUTEX && h->mutex_fraction == 0) {
		snprintf(why, cap, "the mutex profile is off in it: start it with "
			 "CPROF_MUTEX_FRACTION set to N > 0, e.g. CPROF_MUTEX_FRACTION=10 (1 in N)");
		return 0;
	}
	return 1;
}
