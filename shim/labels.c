/*
 * labels.c — the shim's side of include/cprof.h: the exported
 * cprof_labels_* functions, the interning of label sets into the
 * segment's set table, and each thread's slot with its ring of changes
 * (shim/segment.h). A push builds the merged set on the stack (sorted by
 * key, unused bytes zero, so that equal sets are equal bytes), hashes it,
 * finds its id through a private index without a lock, reads the clock
 * (vDSO) and writes one ring entry under the slot's sequence lock:
 * 150-220 ns in all on a VM, most of it the clock read (bench/labels); a
 * pop, a TLS read, the clock and the ring entry, 50-60 ns.
 * Only the first use of a set takes the interning lock. A thread claims a
 * slot at its first change and gives it back at exit (a pthread key's
 * destructor), keeping its ring readable until another thread takes it.
 * Where sets and slots lie, how many there are and a slot's change count
 * are the shim's own copies (table.c, labels_slots_used, labels_tls):
 * never read back from the shared segment to decide where to write.
 */
#include "shim/labels.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "shim/clock.h"
#include "shim/lock.h"
#include "shim/segment.h"
#include "shim/table.h"

__thread struct labels_thread labels_tls __attribute__((tls_model("initial-exec")));

static uint64_t *labels_index;   /* slot: hash tag << 32 | set id; 0 empty */
static size_t labels_index_bytes;
static uint32_t labels_mask;
static int labels_mutex;         /* interning: appending a new set */
static uint64_t labels_gen = 1;  /* + 1 in each fork child: slots of older segments are void */
static pthread_key_t labels_key; /* its destructor gives the slot back at thread exit */
static int labels_key_state;     /* 0 none, 1 being made, 2 made, 3 failed */
static uint64_t labels_slots_used; /* slots claimed in this segment: header.lslot_count's own copy */

int labels_init(void)
{
	uint64_t *index = table_new_index(SEG_DEFAULT_LABELSETS, &labels_index_bytes, &labels_mask);

	if (index == NULL)
		return -1;
	__atomic_store_n(&labels_slots_used, 0, __ATOMIC_RELAXED); /* a new segment's slots */
	__atomic_store_n(&labels_index, index, __ATOMIC_RELEASE);
	return 0;
}

void labels_fini(void)
{
	uint64_t *index = __atomic_exchange_n(&labels_index, NULL, __ATOMIC_ACQ_REL);

	if (index != NULL)
		munmap(index, labels_index_bytes);
}

/*
 * The segment when labels can be recorded: the shim armed and active, the
 * index made. A label call is the program's own code, never inside malloc
 * or a lock function, so it may activate the shim fully (dlsym included):
 * a program may push labels before its first allocation.
 */
static struct seg_header *labels_segment(void)
{
	struct seg_header *h;

	if (__atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) != SHIM_READY)
		return NULL;
	/*
	 * Active already: no call into the activation, whose compare-and-swap
	 * on a word every thread shares would weigh on every push.
	 */
	h = table_segment_labels();
	if (h == NULL || __atomic_load_n(&labels_index, __ATOMIC_ACQUIRE) == NULL) {
		if (!shim_activate() || __atomic_load_n(&labels_index, __ATOMIC_ACQUIRE) == NULL)
			return NULL;
		h = table_segment_labels();
	}
	return __atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) == SHIM_READY ? h : NULL;
}

static struct seg_labelset *labels_sets(struct seg_header *h)
{
	return table_labelsets(h);
}

static struct seg_lslot *labels_slots(struct seg_header *h)
{
	return table_lslots(h);
}

/* Copies s (cut to fit cap bytes, NUL included) into d; 1 if cut. */
static int labels_copy(char *d, const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap) {
		n = cap - 1;
		/* Not in the middle of a UTF-8 sequence. */
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(d, s, n);
	memset(d + n, 0, cap - n);
	return s[n] != 0;
}

/*
 * Sets key to value in s (sorted by key), or removes key when value is
 * NULL. A pair past SEG_LABEL_PAIRS, an empty key, a string cut to fit:
 * flagged truncated.
 */
static void labels_put(struct seg_labelset *s, const char *key, const char *value)
{
	struct seg_label l;
	uint32_t i;
	int c = 1;

	if (*key == 0) {
		s->flags |= SEG_LABELS_TRUNCATED;
		return;
	}
	if (labels_copy(l.key, key, sizeof(l.key)))
		s->flags |= SEG_LABELS_TRUNCATED;
	for (i = 0; i < s->n && (c = strcmp(s->pair[i].key, l.key)) < 0; i++)
		;
	if (i < s->n && c == 0) {
		if (value == NULL) {
			memmove(&s->pair[i], &s->pair[i + 1], (s->n - i - 1) * sizeof(s->pair[0]));
			memset(&s->pair[--s->n], 0, sizeof(s->pair[0]));
		} else if (labels_copy(s->pair[i].value, value, sizeof(l.value))) {
			s->flags |= SEG_LABELS_TRUNCATED;
		}
		return;
	}
	if (value == NULL)
		return;
	if (s->n == SEG_LABEL_PAIRS) {
		s->flags |= SEG_LABELS_TRUNCATED;
		return;
	}
	if (labels_copy(l.value, value, sizeof(l.value)))
		s->flags |= SEG_LABELS_TRUNCATED;
	memmove(&s->pair[i + 1], &s->pair[i], (s->n - i) * sizeof(s->pair[0]));
	s->pair[i] = l;
	s->n++;
}

/* Hash of the set's pairs (FNV-1a over the used strings, then mixed). */
static uint64_t labels_hash(const struct seg_labelset *s)
{
	uint64_t h = 0xcbf29ce484222325ull ^ s->n ^ ((uint64_t)s->flags << 8);
	const unsigned char *p;
	uint32_t i;

	for (i = 0; i < s->n; i++) {
		for (p = (const unsigned char *)s->pair[i].key; *p; p++)
			h = (h ^ *p) * 0x100000001b3ull;
		h = (h ^ 0xff) * 0x100000001b3ull;
		for (p = (const unsigned char *)s->pair[i].value; *p; p++)
			h = (h ^ *p) * 0x100000001b3ull;
		h = (h ^ 0xfe) * 0x100000001b3ull;
	}
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ull;
	return (h ^ (h >> 32)) | 1; /* never 0: 0 is an empty index slot's tag half */
}

/* Equal sets: the pairs in use compared (the unused ones are zero in both). */
static int labels_same(const struct seg_labelset *a, const struct seg_labelset *b)
{
	return a->hash == b->hash && a->n == b->n && a->flags == b->flags &&
	       a->n <= SEG_LABEL_PAIRS && memcmp(a->pair, b->pair, a->n * sizeof(a->pair[0])) == 0;
}

/* The id of s in the index, or 0 with *slot the empty slot where it would go. */
static uint32_t labels_probe(struct seg_header *h, const struct seg_labelset *s, uint32_t *slot)
{
	const struct seg_labelset *sets = labels_sets(h);
	uint64_t cap = table_labelset_count(), e;
	uint32_t i = (uint32_t)s->hash & labels_mask, tag = (uint32_t)(s->hash >> 32), id;

	for (;; i = (i + 1) & labels_mask) {
		e = __atomic_load_n(&labels_index[i], __ATOMIC_ACQUIRE);
		if (e == 0) {
			*slot = i;
			return 0;
		}
		id = (uint32_t)e;
		if ((uint32_t)(e >> 32) == tag && id >= 1 && id <= cap &&
		    labels_same(&sets[id - 1], s))
			return id;
	}
}

/* The id of s (hash set), interned if new; 0 when the table is full (counted). */
static uint32_t labels_intern(struct seg_header *h, struct seg_labelset *s)
{
	uint64_t count;
	uint32_t slot, id;

	if (s->n == 0 && !(s->flags & SEG_LABELS_TRUNCATED))
		return 0;
	if (s->flags & SEG_LABELS_TRUNCATED)
		__atomic_fetch_add(&h->labels_truncated, 1, __ATOMIC_RELAXED);
	if ((id = labels_probe(h, s, &slot)) != 0)
		return id;
	lock_take(&labels_mutex);
	if ((id = labels_probe(h, s, &slot)) != 0) /* another thread may have added it */
		goto out;
	count = table_labelset_count();
	if (count >= SEG_DEFAULT_LABELSETS) {
		__atomic_fetch_add(&h->labels_dropped, 1, __ATOMIC_RELAXED);
		goto out;
	}
	memcpy(&labels_sets(h)[count], s, sizeof(*s));
	table_labelset_published(h, count + 1);
	id = (uint32_t)count + 1;
	__atomic_store_n(&labels_index[slot], (uint64_t)(uint32_t)(s->hash >> 32) << 32 | id,
			 __ATOMIC_RELEASE);
out:
	lock_give(&labels_mutex);
	return id;
}

/* Gives the slot back at thread exit: its ring stays readable until reused. */
static void labels_thread_exit(void *arg)
{
	struct labels_thread *t = &labels_tls;

	(void)arg;
	if (t->slot != NULL && t->gen == __atomic_load_n(&labels_gen, __ATOMIC_ACQUIRE))
		__atomic_store_n(&t->slot->state, SEG_LSLOT_EXITED, __ATOMIC_RELEASE);
	t->slot = NULL;
	t->noslot = 0;
}

/* The thread-exit key, made once, at a first claim (never inside malloc). */
static int labels_key_ready(void)
{
	int st = __atomic_load_n(&labels_key_state, __ATOMIC_ACQUIRE), expected = 0;

	if (st == 2)
		return 1;
	if (st != 0 || !__atomic_compare_exchange_n(&labels_key_state, &expected, 1, 0,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return __atomic_load_n(&labels_key_state, __ATOMIC_ACQUIRE) == 2;
	st = pthread_key_create(&labels_key, labels_thread_exit) == 0 ? 2 : 3;
	__atomic_store_n(&labels_key_state, st, __ATOMIC_RELEASE);
	return st == 2;
}

/*
 * A slot for this thread: a never-used one while any is left (so that
 * ended threads' rings stay readable longest), else one whose thread
 * ended. Owned from here on: tid, state LIVE, no changes yet.
 */
static struct seg_lslot *labels_claim(struct seg_header *h, uint64_t *seq)
{
	struct seg_lslot *slots = labels_slots(h), *sl = NULL;
	uint64_t n = __atomic_load_n(&labels_slots_used, __ATOMIC_RELAXED), i, s, v;
	uint32_t st;

	while (n < SEG_DEFAULT_LSLOTS) {
		if (__atomic_compare_exchange_n(&labels_slots_used, &n, n + 1, 1, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			sl = &slots[n];
			/* The header's count only grows, to at least ours: readers look that far. */
			v = __atomic_load_n(&h->lslot_count, __ATOMIC_RELAXED);
			while (v < n + 1 && !__atomic_compare_exchange_n(&h->lslot_count, &v, n + 1, 1,
									 __ATOMIC_RELEASE,
									 __ATOMIC_RELAXED))
				;
			break;
		}
	}
	for (i = 0; sl == NULL && i < SEG_DEFAULT_LSLOTS; i++) {
		st = SEG_LSLOT_EXITED;
		if (__atomic_load_n(&slots[i].state, __ATOMIC_RELAXED) == SEG_LSLOT_EXITED &&
		    __atomic_compare_exchange_n(&slots[i].state, &st, SEG_LSLOT_LIVE, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			sl = &slots[i];
	}
	if (sl == NULL) {
		__atomic_fetch_add(&h->lslots_full, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	s = __atomic_load_n(&sl->seq, __ATOMIC_RELAXED) & ~1ull;
	__atomic_store_n(&sl->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->seq_end, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	sl->tid = (uint32_t)gettid();
	sl->state = SEG_LSLOT_LIVE;
	sl->changes = 0;
	sl->cur = 0;
	__atomic_store_n(&sl->seq_end, s + 2, __ATOMIC_RELEASE);
	__atomic_store_n(&sl->seq, s + 2, __ATOMIC_RELEASE);
	*seq = s + 2;
	return sl;
}

/*
 * Writes one change (now, id) into t's slot, under its sequence lock (the
 * owner is the only writer: plain stores, ordered by fences as in
 * table.c's table_open/table_close). The lock word and the change count
 * are the thread's own copies, written to the slot, never read from it.
 */
static void labels_publish(struct labels_thread *t, uint32_t id)
{
	struct seg_lslot *sl = t->slot;
	uint64_t s = t->seq, c = t->changes, ns = shim_mono_ns();

	__atomic_store_n(&sl->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->seq_end, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	sl->ring[c % SEG_LABEL_RING].ns = ns;
	sl->ring[c % SEG_LABEL_RING].set = id;
	sl->changes = c + 1;
	sl->cur = id;
	__atomic_store_n(&sl->seq_end, s + 2, __ATOMIC_RELEASE);
	__atomic_store_n(&sl->seq, s + 2, __ATOMIC_RELEASE);
	t->seq = s + 2;
	t->changes = c + 1;
}

/* Makes id the thread's set: for its buckets at once, and in its slot for cprof-attach. */
static void labels_change(struct labels_thread *t, struct seg_header *h, uint32_t id, int claim)
{
	uint64_t gen = __atomic_load_n(&labels_gen, __ATOMIC_ACQUIRE);

	t->cur = id;
	if (h == NULL)
		return;
	if (t->gen != gen) {
		t->slot = NULL;
		t->noslot = 0;
		t->gen = gen;
	}
	if (t->slot == NULL && !t->noslot && claim) {
		t->slot = labels_claim(h, &t->seq);
		t->changes = 0;
		t->noslot = t->slot == NULL;
		if (t->slot != NULL && labels_key_ready())
			(void)pthread_setspecific(labels_key, t->slot);
	}
	if (t->slot != NULL)
		labels_publish(t, id);
}

/*
 * The set of base (merged) or of nothing (replaced) with the pairs
 * key, value, ap... put in; its id (0: none, or not internable).
 */
static uint32_t labels_build(struct seg_header *h, uint32_t base, const char *key,
			     const char *value, va_list ap)
{
	struct seg_labelset s;

	if (base != 0 && base <= table_labelset_count()) {
		s = labels_sets(h)[base - 1];
		s.flags = 0; /* the base's truncation was counted when it was made */
	} else {
		memset(&s, 0, sizeof(s));
	}
	while (key != NULL) {
		labels_put(&s, key, value);
		key = va_arg(ap, const char *);
		if (key != NULL)
			value = va_arg(ap, const char *);
	}
	s.hash = labels_hash(&s);
	return labels_intern(h, &s);
}

void cprof_labels_vpush(const char *key, const char *value, va_list ap)
{
	struct labels_thread *t = &labels_tls;
	struct seg_header *h;
	uint32_t id;

	shim_tls.busy++;
	h = labels_segment();
	if (t->depth < LABELS_DEPTH)
		t->saved[t->depth] = t->cur;
	else if (h != NULL)
		__atomic_fetch_add(&h->labels_unbalanced, 1, __ATOMIC_RELAXED);
	t->depth++;
	if (h != NULL) {
		id = labels_build(h, t->cur, key, value, ap);
		if (id != t->cur)
			labels_change(t, h, id, 1);
	}
	shim_tls.busy--;
}

void cprof_labels_push(const char *key, const char *value, ...)
{
	va_list ap;

	va_start(ap, value);
	cprof_labels_vpush(key, value, ap);
	va_end(ap);
}

void cprof_labels_pop(void)
{
	struct labels_thread *t = &labels_tls;
	struct seg_header *h;
	uint32_t id;

	shim_tls.busy++;
	h = labels_segment();
	if (t->depth == 0 || t->depth > LABELS_DEPTH) {
		/* A pop without a push, or of a push too deep to remember: labels unchanged. */
		if (h != NULL)
			__atomic_fetch_add(&h->labels_unbalanced, 1, __ATOMIC_RELAXED);
		if (t->depth > 0)
			t->depth--;
		shim_tls.busy--;
		return;
	}
	id = t->saved[--t->depth];
	if (h != NULL && id != t->cur)
		labels_change(t, h, id, 1);
	else if (h == NULL)
		t->cur = 0;
	shim_tls.busy--;
}

void cprof_labels_vset(const char *key, const char *value, va_list ap)
{
	struct labels_thread *t = &labels_tls;
	struct seg_header *h;
	uint32_t id;

	shim_tls.busy++;
	if ((h = labels_segment()) != NULL) {
		id = labels_build(h, 0, key, value, ap);
		if (id != t->cur)
			labels_change(t, h, id, 1);
	}
	shim_tls.busy--;
}

void cprof_labels_set(const char *key, const char *value, ...)
{
	va_list ap;

	va_start(ap, value);
	cprof_labels_vset(key, value, ap);
	va_end(ap);
}

void cprof_labels_clear(void)
{
	struct labels_thread *t = &labels_tls;
	struct seg_header *h;

	shim_tls.busy++;
	if ((h = labels_segment()) != NULL && t->cur != 0)
		labels_change(t, h, 0, 0);
	shim_tls.busy--;
}

int cprof_labels_active(void)
{
	int on;

	shim_tls.busy++;
	on = labels_segment() != NULL;
	shim_tls.busy--;
	return on;
}

void labels_fork_child(void)
{
	struct labels_thread *t = &labels_tls;
	struct seg_header *h = table_segment_labels();

	labels_mutex = 0;
	labels_slots_used = 0; /* the child's segment: fresh slots */
	__atomic_add_fetch(&labels_gen, 1, __ATOMIC_ACQ_REL);
	t->slot = NULL;
	t->noslot = 0;
	if (h == NULL || labels_index == NULL) {
		t->cur = 0;
		return;
	}
	/* The sets kept their ids: publish this thread's, so samples of the child find it. */
	if (t->cur != 0)
		labels_change(t, h, t->cur, 1);
}
