/*
 * labelsrc.c — a target's own labels for the samples of a cpu, wall or
 * threads capture (labelsrc.h). The shim keeps, per thread, a ring of its
 * last SEG_LABEL_RING label changes with their CLOCK_MONOTONIC times; this
 * reader copies the slots (segment_copy_slots: 24 bytes a labelled thread,
 * and ~4 KiB for each whose labels changed) whenever a sample is newer
 * than its last copy, and appends each thread's new changes to a history
 * of its own, so a sample
 * finds the set in force at its time by a binary search however late it
 * is turned into a profile sample. A ptrace snapshot's time is taken with
 * the thread stopped, a perf sample's by the kernel at the interrupt:
 * both on CLOCK_MONOTONIC, the shim's clock.
 */
#include "attach/source/labelsrc.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/proc.h"
#include "common/u64map.h"
#include "model/profile.h"

#define LABELSRC_GAP UINT32_MAX      /* a history entry: changes lost here */
#define LABELSRC_FIND_NS 100000000ull /* look for a segment not found yet this often */

struct change {
	uint64_t ns;
	uint32_t set;                /* set id, 0, or LABELSRC_GAP */
};

struct history {
	uint64_t seen;               /* the slot's changes already taken */
	struct change *e;
	size_t n, cap;
};

struct label_src {
	pthread_mutex_t lock;        /* labelsrc_trysync() from another thread (labelsrc.h) */
	pid_t pid;
	int found;                   /* 1: the segment is at [addr, addr + len) */
	int absent;                  /* no libcprof.so in the process: never looked for again */
	char other[256];             /* the segment is of a layout this build cannot read: why */
	uint64_t addr, len;
	uint64_t read_ns;            /* when the last copy began (0: none yet) */
	uint64_t find_ns;            /* when the segment was last looked for */
	struct seg_copy copy;        /* the newest copy: its sets name the labels */
	int have_copy;
	struct u64map tids;          /* tid -> 1 + index in hist */
	struct history *hist;
	size_t nhist, caphist;
	uint32_t *live;              /* the target's threads, sorted, as last listed */
	size_t nlive, caplive;
	uint64_t live_read;          /* the read (st.reads) they were listed at */
	struct labelsrc_keys keys;   /* reserved keys noted */
	struct labelsrc_stats st;
};

struct label_src *labelsrc_new(pid_t pid)
{
	struct label_src *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	s->pid = pid;
	s->keys.pid = pid;
	u64map_init(&s->tids, LABELSRC_MAX_THREADS);
	return s;
}

void labelsrc_free(struct label_src *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nhist; i++)
		free(s->hist[i].e);
	free(s->hist);
	free(s->live);
	u64map_release(&s->tids);
	if (s->have_copy)
		segment_release(&s->copy);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

const struct labelsrc_stats *labelsrc_stats(const struct label_src *s)
{
	return &s->st;
}

const struct seg_header *labelsrc_header(const struct label_src *s)
{
	return s && s->have_copy ? &s->copy.h : NULL;
}

/* Append "V TEXT" to what[*n..cap), comma-separated, when v is not 0. */
static void labelsrc_say(char *what, size_t cap, size_t *n, uint64_t v, const char *text)
{
	int r;

	if (!v || *n >= cap)
		return;
	r = snprintf(what + *n, cap - *n, "%s%llu %s", *n ? ", " : "", (unsigned long long)v,
		     text);
	if (r > 0)
		*n += (size_t)r;
}

void labelsrc_warn(const struct label_src *s, const struct seg_header *h, pid_t pid,
		   const char *comm)
{
	char what[512], text[80];
	size_t n = 0;

	what[0] = 0;
	if (h && h->version >= 4) {
		snprintf(text, sizeof(text), "label changes past its %llu label sets",
			 (unsigned long long)h->labelset_cap);
		labelsrc_say(what, sizeof(what), &n, h->labels_dropped, text);
		snprintf(text, sizeof(text), "label sets cut to %d pairs or shorter strings",
			 SEG_LABEL_PAIRS);
		labelsrc_say(what, sizeof(what), &n, h->labels_truncated, text);
		snprintf(text, sizeof(text), "threads past its %llu label slots",
			 (unsigned long long)h->lslot_cap);
		labelsrc_say(what, sizeof(what), &n, h->lslots_full, text);
		labelsrc_say(what, sizeof(what), &n, h->labels_unbalanced,
			     "unbalanced label pops or pushes too deep");
	}
	if (s)
		labelsrc_say(what, sizeof(what), &n, s->st.unknown,
			     "samples whose labels changed too fast to be read");
	if (n)
		warning("the labels of %d (%s) are not all recorded: %s", (int)pid, comm, what);
	if (s && s->other[0])
		warning("the labels of %d (%s) are not read: %s", (int)pid, comm, s->other);
}

/* tid's history, made on first sight; NULL past the cap or out of memory. */
static struct history *history_of(struct label_src *s, uint32_t tid, int make)
{
	struct history *v;
	uint64_t i;

	if (u64map_get(&s->tids, tid, &i))
		return &s->hist[i - 1];
	if (!make)
		return NULL;
	if (s->nhist == s->caphist) {
		size_t n = s->caphist ? s->caphist * 2 : 16;

		if (n > LABELSRC_MAX_THREADS || !(v = realloc(s->hist, n * sizeof(*v))))
			return NULL;
		s->hist = v;
		s->caphist = n;
	}
	if (u64map_put(&s->tids, tid, s->nhist + 1) < 0)
		return NULL;
	memset(&s->hist[s->nhist], 0, sizeof(s->hist[0]));
	return &s->hist[s->nhist++];
}

/* Drops h's oldest half: its first entry stays, as a gap up to the kept half. */
static void history_halve(struct history *h)
{
	size_t half = h->n / 2;

	if (h->n < 2)
		return;
	memmove(h->e + 1, h->e + half + 1, (h->n - half - 1) * sizeof(*h->e));
	h->n -= half;
	h->e[0].set = LABELSRC_GAP;
}

/*
 * Every history halved and its memory cut to fit: what lets the total
 * stay under LABELSRC_MAX_ENTRIES. Samples are labelled soon after they
 * are taken, so the oldest changes are the ones no sample still needs.
 */
static void histories_shrink(struct label_src *s)
{
	struct change *v;
	size_t i, total = 0;

	for (i = 0; i < s->nhist; i++) {
		struct history *h = &s->hist[i];

		history_halve(h);
		if (h->cap > h->n && (v = realloc(h->e, (h->n ? h->n : 1) * sizeof(*v)))) {
			h->e = v;
			h->cap = h->n ? h->n : 1;
		}
		total += h->e ? h->cap : 0;
	}
	s->st.entries = total;
}

/*
 * Appends (ns, set); past the per-thread cap the oldest half goes,
 * leaving a gap; past the total cap every history is halved first.
 */
static void history_add(struct label_src *s, struct history *h, uint64_t ns, uint32_t set)
{
	struct change *v;
	size_t n;

	if (h->n && h->e[h->n - 1].ns > ns)
		ns = h->e[h->n - 1].ns; /* a clock that went back (it does not): keep the order */
	if (h->n == LABELSRC_MAX_CHANGES)
		history_halve(h);
	if (h->n == h->cap) {
		n = h->cap ? h->cap * 2 : 64;
		if (s->st.entries + (n - h->cap) > LABELSRC_MAX_ENTRIES) {
			histories_shrink(s); /* h->cap is h->n now */
			n = h->cap * 2 > 64 ? h->cap * 2 : 64;
			if (s->st.entries + (n - h->cap) > LABELSRC_MAX_ENTRIES)
				return;
		}
		if (!(v = realloc(h->e, n * sizeof(*v))))
			return;
		s->st.entries += n - h->cap;
		h->e = v;
		h->cap = n;
	}
	h->e[h->n].ns = ns;
	h->e[h->n++].set = set;
}

static int tid_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Whether tid is a thread of the target now (/proc/PID/task, listed once
 * a read, at most LABELSRC_MAX_THREADS): a slot is taken only for a
 * thread that exists, so what the segment claims cannot grow the
 * histories past the threads there are.
 */
static int tid_live(struct label_src *s, uint32_t tid)
{
	char path[64];
	struct dirent *d;
	uint32_t *v;
	DIR *dir;
	char *end;
	unsigned long t;

	if (s->live_read != s->st.reads) {
		s->live_read = s->st.reads;
		s->nlive = 0;
		snprintf(path, sizeof(path), "/proc/%d/task", (int)s->pid);
		if (!(dir = opendir(path)))
			return 0;
		while ((d = readdir(dir)) && s->nlive < LABELSRC_MAX_THREADS) {
			t = strtoul(d->d_name, &end, 10);
			if (*end || !t || t > UINT32_MAX)
				continue;
			if (s->nlive == s->caplive) {
				size_t cap = s->caplive ? s->caplive * 2 : 256;

				if (!(v = realloc(s->live, cap * sizeof(*v))))
					break;
				s->live = v;
				s->caplive = cap;
			}
			s->live[s->nlive++] = (uint32_t)t;
		}
		closedir(dir);
		if (s->nlive)
			qsort(s->live, s->nlive, sizeof(*s->live), tid_cmp);
	}
	return s->nlive && bsearch(&tid, s->live, s->nlive, sizeof(tid), tid_cmp) != NULL;
}

/*
 * Takes slot sl's changes not yet seen into its thread's history: only a
 * thread with a history already or alive now.
 */
static void take_slot(struct label_src *s, const struct seg_lslot *sl)
{
	struct history *h;
	uint64_t k, first;

	if (!sl->tid)
		return;
	if (!(h = history_of(s, sl->tid, 0)) &&
	    (!tid_live(s, sl->tid) || !(h = history_of(s, sl->tid, 1))))
		return;
	if (sl->changes < h->seen)
		h->seen = 0; /* the slot was given to a thread of the same tid: a new life */
	if (sl->changes == h->seen)
		return;
	first = sl->changes > SEG_LABEL_RING ? sl->changes - SEG_LABEL_RING : 0;
	if (first > h->seen) {
		/* Lost before read: from just after the last known change (or the start). */
		history_add(s, h, h->n ? h->e[h->n - 1].ns + 1 : 0, LABELSRC_GAP);
	} else {
		first = h->seen;
	}
	for (k = first; k < sl->changes; k++)
		history_add(s, h, sl->ring[k % SEG_LABEL_RING].ns, sl->ring[k % SEG_LABEL_RING].set);
	h->seen = sl->changes;
}

/* Reads the slots and sets again; keeps the last good copy on failure. */
static void refresh(struct label_src *s, uint64_t now)
{
	struct seg_copy c;
	char why[256];
	size_t i;
	int r;

	if (!s->found) {
		if (s->absent || (s->find_ns && now - s->find_ns < LABELSRC_FIND_NS))
			return;
		s->find_ns = now;
		switch (segment_find(s->pid, &s->addr, &s->len)) {
		case 1:
			__atomic_store_n(&s->found, 1, __ATOMIC_RELEASE);
			break;
		case 0:
			s->absent = 1; /* a process without the shim: one read of its maps */
			return;
		default:
			return; /* the shim has no segment yet (it makes one at its first use) */
		}
	}
	__atomic_store_n(&s->read_ns, now, __ATOMIC_RELEASE); /* labelsrc_ready reads it unlocked */
	s->st.reads++;
	r = segment_copy_slots(&c, segment_read_process, (void *)(intptr_t)s->pid, s->addr, s->len,
			       s->have_copy ? &s->copy : NULL, why, sizeof(why));
	if (r == -2) {
		/* Another layout stays another: not read again, said once at the end. */
		snprintf(s->other, sizeof(s->other), "%s", why);
		__atomic_store_n(&s->found, 0, __ATOMIC_RELEASE);
		s->absent = 1;
	}
	if (r < 0)
		return;
	s->st.torn += c.slots_torn;
	for (i = 0; i < c.nslots; i++)
		take_slot(s, &c.slots[i]);
	if (s->have_copy)
		segment_release(&s->copy);
	s->copy = c;
	s->have_copy = 1;
}

int labelsrc_ready(const struct label_src *s, uint64_t ns)
{
	uint64_t read_ns;

	if (!s || !__atomic_load_n(&s->found, __ATOMIC_ACQUIRE))
		return 1;
	read_ns = __atomic_load_n(&s->read_ns, __ATOMIC_ACQUIRE);
	if (ns < read_ns)
		return 1;
	return clock_mono_ns() - read_ns >= LABELSRC_MIN_MS * 1000000ull;
}

void labelsrc_sync(struct label_src *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	refresh(s, clock_mono_ns());
	pthread_mutex_unlock(&s->lock);
}

int labelsrc_trysync(struct label_src *s, unsigned min_ms)
{
	uint64_t now = clock_mono_ns();
	int r = 0;

	if (!s || pthread_mutex_trylock(&s->lock) != 0)
		return 0;
	if (!s->absent && (!s->read_ns || now - s->read_ns >= min_ms * 1000000ull)) {
		refresh(s, now);
		r = 1;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int labelsrc_poll(struct label_src *s)
{
	uint64_t now = clock_mono_ns(), due = LABELSRC_POLL_MS * 1000000ull;
	int r;

	if (!s)
		return -1;
	pthread_mutex_lock(&s->lock);
	if (!s->found)
		refresh(s, now); /* looks for the segment, at most every 100 ms */
	if (!s->found || !s->nhist)
		r = -1;
	else
		r = now - s->read_ns >= due ? 0 : (int)((s->read_ns + due - now + 999999) / 1000000);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* The set in force on h at ns: an id, 0 (none) or LABELSRC_GAP. */
static uint32_t history_at(const struct history *h, uint64_t ns)
{
	size_t lo = 0, hi = h->n, mid;

	/* The last change at or before ns. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (h->e[mid].ns <= ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? h->e[lo - 1].set : 0;
}

const char *labelsrc_reserved(const char *k)
{
	if (profile_own_label(k) >= 0 || !strcmp(k, "bytes"))
		return "cprof's own";
	if (!strcmp(k, "service_name") || (k[0] == '_' && k[1] == '_'))
		return "Pyroscope's";
	return NULL;
}

/* Key k as text for a terminal: anything unprintable as \xHH. */
static void key_text(const char *k, char *out, size_t cap)
{
	size_t n = 0;
	int r;

	for (; *k && n + 5 < cap; k++) {
		unsigned char c = (unsigned char)*k;

		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
			out[n++] = (char)c;
		} else if ((r = snprintf(out + n, cap - n, "\\x%02x", c)) > 0) {
			n += (size_t)r;
		}
	}
	out[n] = 0;
}

/* One note the first time a capture drops key k (why: whose it is). */
static void key_note(struct labelsrc_keys *ks, const char *k, const char *why)
{
	char text[4 * SEG_LABEL_KEY + 8];
	size_t i;

	if (!ks)
		return;
	for (i = 0; i < ks->n; i++)
		if (!strcmp(ks->key[i], k))
			return;
	if (ks->n == LABELSRC_NOTED) {
		if (!ks->more)
			note("more of the labels of %d have reserved keys: left out of the profile",
			     (int)ks->pid);
		ks->more = 1;
		return;
	}
	snprintf(ks->key[ks->n++], sizeof(ks->key[0]), "%s", k);
	key_text(k, text, sizeof(text));
	note("the label key \"%s\" of %d is reserved (%s): its labels are left out of the "
	     "profile", text, (int)ks->pid, why);
}

size_t labelsrc_set(const struct seg_copy *c, uint32_t id, struct profile_label_in *l,
		    size_t max, struct labelsrc_keys *keys)
{
	const struct seg_labelset *set = segment_labelset(c, id);
	const char *why;
	size_t i, n = 0;

	if (!set)
		return 0;
	for (i = 0; i < set->n && i < SEG_LABEL_PAIRS && n < max; i++) {
		if (!set->pair[i].key[0])
			continue;
		if ((why = labelsrc_reserved(set->pair[i].key))) {
			key_note(keys, set->pair[i].key, why);
			continue;
		}
		memset(&l[n], 0, sizeof(l[n]));
		l[n].key = set->pair[i].key;
		l[n++].str = set->pair[i].value;
	}
	return n;
}

/* Copy l[0..n)'s strings into text and point l at the copies. */
static void labels_copy_out(struct profile_label_in *l, size_t n, struct labelsrc_text *text)
{
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(text->key[i], sizeof(text->key[i]), "%s", l[i].key);
		l[i].key = text->key[i];
		if (l[i].str) {
			snprintf(text->value[i], sizeof(text->value[i]), "%s", l[i].str);
			l[i].str = text->value[i];
		}
	}
}

static size_t labels_at(struct label_src *s, uint32_t tid, uint64_t ns, struct profile_label_in *l,
			size_t max)
{
	const struct history *h;
	uint64_t now;
	uint32_t set;
	size_t n;

	/*
	 * A sample newer than the last read: its change, if any, is only in
	 * the ring. A read now (after the sample) has every change before it;
	 * within LABELSRC_MIN_MS of the last one, the last stands (a caller
	 * that must be exact asked labelsrc_ready first).
	 */
	if (ns >= s->read_ns) {
		now = clock_mono_ns();
		if (!s->read_ns || now - s->read_ns >= LABELSRC_MIN_MS * 1000000ull)
			refresh(s, now);
	}
	if (!s->have_copy || !(h = history_of(s, tid, 0)))
		return 0;
	set = history_at(h, ns);
	if (set == LABELSRC_GAP) {
		s->st.unknown++;
		return 0;
	}
	n = labelsrc_set(&s->copy, set, l, max, &s->keys);
	if (n)
		s->st.labelled++;
	return n;
}

size_t labelsrc_at(struct label_src *s, uint32_t tid, uint64_t ns, struct profile_label_in *l,
		   size_t max, struct labelsrc_text *text)
{
	size_t n;

	if (!s)
		return 0;
	if (max > LABELSRC_MAX)
		max = LABELSRC_MAX;
	pthread_mutex_lock(&s->lock);
	n = labels_at(s, tid, ns, l, max);
	labels_copy_out(l, n, text);
	pthread_mutex_unlock(&s->lock);
	return n;
}
