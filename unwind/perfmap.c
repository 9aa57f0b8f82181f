/*
 * perfmap.c — parse a perf map into a sorted table of disjoint ranges.
 * Lines are parsed in file order and numbered; a sweep over the sorted
 * range boundaries then gives every byte to the last line covering it,
 * which is what a JIT that recycled code memory means.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/troot.h"
#include "unwind/perfmap.h"

struct raw {
	uint64_t start, end;
	size_t name, line;
};

void perfmap_init(struct perfmap *m)
{
	memset(m, 0, sizeof(*m));
}

void perfmap_release(struct perfmap *m)
{
	free(m->v);
	free(m->names);
	perfmap_init(m);
}

/* A hex number at s[0..n) (optional 0x); the bytes used, 0 when none. */
static size_t hex(const char *s, size_t n, uint64_t *v)
{
	size_t i = 0, d = 0;

	*v = 0;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	for (; i < n; i++, d++) {
		char c = s[i];
		unsigned x;

		if (c >= '0' && c <= '9')
			x = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			x = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			x = (unsigned)(c - 'A' + 10);
		else
			break;
		if (d >= 16)
			return 0; /* more than 64 bits */
		*v = *v << 4 | x;
	}
	return d ? i : 0;
}

static size_t skip_blanks(const char *s, size_t i, size_t n)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i;
}

/* Parse one line into r and its name into names. 0, 1 to skip it, -1 out of memory. */
static int parse_line(const char *s, size_t n, struct raw *r, char **names, size_t *len,
		      size_t *cap)
{
	uint64_t size;
	size_t i = 0, k, nl, j;
	char *v;

	if (n > PERFMAP_MAX_LINE)
		return 1;
	i = skip_blanks(s, i, n);
	if (!(k = hex(s + i, n - i, &r->start)))
		return 1;
	i += k;
	if (i >= n || (s[i] != ' ' && s[i] != '\t'))
		return 1;
	i = skip_blanks(s, i, n);
	if (!(k = hex(s + i, n - i, &size)))
		return 1;
	i += k;
	if (i >= n || (s[i] != ' ' && s[i] != '\t') || size == 0 || r->start + size < r->start)
		return 1;
	r->end = r->start + size;
	i = skip_blanks(s, i, n);
	while (n > i && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (i >= n)
		return 1;
	nl = n - i > PERFMAP_MAX_NAME ? PERFMAP_MAX_NAME : n - i;
	v = array_grow(*names, cap, *len + nl + 1, 1, PERFMAP_MAX_BYTES + PERFMAP_MAX_NAME + 1);
	if (!v)
		return -1;
	*names = v;
	r->name = *len;
	for (j = 0; j < nl; j++) {
		unsigned char c = (unsigned char)s[i + j];

		v[*len + j] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	v[*len + nl] = 0;
	*len += nl + 1;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct raw *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A max-heap of raw indices by line: the newest range covering a point on top. */
struct heap {
	size_t *v, n;
};

static void heap_push(struct heap *h, const struct raw *r, size_t i)
{
	size_t k = h->n++, up;

	h->v[k] = i;
	while (k && r[h->v[up = (k - 1) / 2]].line < r[h->v[k]].line) {
		size_t t = h->v[up];

		h->v[up] = h->v[k];
		h->v[k] = t;
		k = up;
	}
}

static void heap_pop(struct heap *h, const struct raw *r)
{
	size_t k = 0, c, t;

	h->v[0] = h->v[--h->n];
	while ((c = 2 * k + 1) < h->n) {
		if (c + 1 < h->n && r[h->v[c + 1]].line > r[h->v[c]].line)
			c++;
		if (r[h->v[k]].line >= r[h->v[c]].line)
			break;
		t = h->v[k];
		h->v[k] = h->v[c];
		h->v[c] = t;
		k = c;
	}
}

/* Append [start, end) named by raw entry w, merged with the last one when it continues it. 0 or -1. */
static int emit(struct perfmap *m, size_t *cap, const struct raw *w, uint64_t start, uint64_t end,
		size_t *last_w, size_t wi)
{
	struct perfmap_entry *v;

	if (m->n && *last_w == wi && m->v[m->n - 1].end == start) {
		m->v[m->n - 1].end = end;
		return 0;
	}
	v = array_grow(m->v, cap, m->n + 1, sizeof(*v), PERFMAP_MAX_ENTRIES);
	if (!v)
		return -1;
	m->v = v;
	v[m->n].start = start;
	v[m->n].end = end;
	v[m->n++].name = w->name;
	*last_w = wi;
	return 0;
}

/*
 * Sweep the ranges into m, disjoint: every byte belongs to the last line
 * that covers it. Between consecutive range boundaries the owner is the
 * newest range still open (a heap by line number). O(n log n). 0 or -1.
 */
static int sweep(struct perfmap *m, struct raw *r, size_t n)
{
	uint64_t *bound = NULL;
	struct heap h = { NULL, 0 };
	size_t i, j = 0, nb = 0, cap = 0, last_w = SIZE_MAX;
	int ret = -1;

	if (!n)
		return 0;
	qsort(r, n, sizeof(*r), by_start);
	bound = malloc(2 * n * sizeof(*bound));
	h.v = malloc(n * sizeof(*h.v));
	if (!bound || !h.v)
		goto out;
	for (i = 0; i < n; i++) {
		bound[nb++] = r[i].start;
		bound[nb++] = r[i].end;
	}
	qsort(bound, nb, sizeof(*bound), by_u64);
	for (i = 0; i + 1 < nb; i++) {
		uint64_t at = bound[i], next = bound[i + 1];

		if (at == next)
			continue;
		while (j < n && r[j].start <= at)
			heap_push(&h, r, j++);
		while (h.n && r[h.v[0]].end <= at)
			heap_pop(&h, r); /* ended: newer ranges ending later stay */
		if (h.n && emit(m, &cap, &r[h.v[0]], at, next, &last_w, h.v[0]) < 0)
			goto out;
	}
	ret = 0;
out:
	free(bound);
	free(h.v);
	return ret;
}

int perfmap_parse(struct perfmap *m, const char *text, size_t len)
{
	struct raw *raw = NULL, *g;
	size_t nraw = 0, rawcap = 0, namecap = 0, at = 0, eol, skipped = 0;
	int r;

	perfmap_release(m);
	if (len > PERFMAP_MAX_BYTES) {
		len = PERFMAP_MAX_BYTES;
		m->capped = 1;
	}
	while (at < len) {
		const char *nlp = memchr(text + at, '\n', len - at);

		eol = nlp ? (size_t)(nlp - text) : len;
		if (nraw >= PERFMAP_MAX_ENTRIES) {
			m->capped = 1;
			break;
		}
		g = array_grow(raw, &rawcap, nraw + 1, sizeof(*raw), PERFMAP_MAX_ENTRIES);
		if (!g)
			goto oom;
		raw = g;
		r = parse_line(text + at, eol - at, &raw[nraw], &m->names, &m->names_len, &namecap);
		if (r < 0)
			goto oom;
		if (r == 0)
			raw[nraw].line = nraw, nraw++;
		else if (eol > at)
			skipped++;
		at = eol + 1;
	}
	if (sweep(m, raw, nraw) < 0)
		goto oom;
	free(raw);
	m->skipped = skipped;
	return 0;
oom:
	free(raw);
	perfmap_release(m);
	return -1;
}

/* pid as the target's own namespace numbers it (the last NSpid field), or pid. */
static pid_t ns_pid(pid_t pid)
{
	char p[64], buf[4096], *s, *e;
	long v = pid;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	if (proc_read(p, buf, sizeof(buf)) < 0 || !(s = strstr(buf, "\nNSpid:")))
		return pid;
	s += 7;
	for (;;) {
		long x = strtol(s, &e, 10);

		if (e == s)
			break;
		v = x;
		s = e;
	}
	return v > 0 ? (pid_t)v : pid;
}

/* Read at most PERFMAP_MAX_BYTES of fd from off into a new buffer; *len its length. */
static char *read_from(int fd, off_t off, size_t *len)
{
	size_t cap = 1u << 16;
	char *buf = malloc(cap), *g;
	ssize_t n;

	*len = 0;
	while (buf) {
		if (*len == cap) {
			g = cap >= PERFMAP_MAX_BYTES ? NULL : realloc(buf, cap * 2);
			if (!g)
				break; /* the cap: parse what was read */
			buf = g;
			cap *= 2;
		}
		n = pread(fd, buf + *len, cap - *len, off + (off_t)*len);
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	return buf;
}

/* Where the last max lines of text[0..len) start (0: it has no more). */
static size_t last_lines(const char *text, size_t len, size_t max)
{
	size_t end = len, lines = 0;
	const char *nl;

	if (len && text[len - 1] == '\n')
		end--; /* the last line's own newline */
	while ((nl = memrchr(text, '\n', end))) {
		if (++lines == max)
			return (size_t)(nl - text) + 1;
		end = (size_t)(nl - text);
	}
	return 0;
}

int perfmap_read(struct perfmap *m, pid_t pid)
{
	char p[64], *buf, *nl;
	const char *why = NULL;
	struct perfmap fresh;
	struct stat st;
	uint64_t t0 = clock_mono_ns();
	size_t len = 0, skip = 0, cut;
	off_t off = 0;
	int fd, e;

	if (t0 < m->next_ns)
		return 0; /* the last read's cost is not paid back yet: keep what it gave */
	/* In the target's root, as the target: a link there cannot reach a file it could not read. */
	snprintf(p, sizeof(p), "/tmp/perf-%d.map", (int)ns_pid(pid));
	fd = troot_open(pid, p, TROOT_FOLLOW, &why);
	if (fd < 0) {
		e = errno;
		if (why && troot_first_time(p))
			note("the perf map %s of process %d is %s: not read",
			     p, (int)pid, why);
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (m->read_once && m->ino == (uint64_t)st.st_ino && m->size == (uint64_t)st.st_size &&
	    m->mtime_ns == (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec) {
		close(fd);
		return 0; /* unchanged since it was parsed */
	}
	/* Over the cap: its last part, where a JIT appends the code it made last. */
	if ((uint64_t)st.st_size > PERFMAP_MAX_BYTES)
		off = st.st_size - (off_t)PERFMAP_MAX_BYTES;
	buf = read_from(fd, off, &len);
	e = errno;
	close(fd);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	if (off > 0 && (nl = memchr(buf, '\n', len)))
		skip = (size_t)(nl - buf) + 1; /* the first line is cut */
	cut = last_lines(buf + skip, len - skip, PERFMAP_MAX_ENTRIES);
	skip += cut;
	perfmap_init(&fresh);
	if (perfmap_parse(&fresh, buf + skip, len - skip) < 0) {
		free(buf);
		errno = e ? e : ENOMEM;
		return -1;
	}
	free(buf);
	fresh.capped |= off > 0 || cut > 0;
	fresh.read_once = 1;
	fresh.ino = (uint64_t)st.st_ino;
	fresh.size = (uint64_t)st.st_size;
	fresh.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	fresh.next_ns = clock_mono_ns() + PERFMAP_BACKOFF * (clock_mono_ns() - t0);
	if (fresh.capped && troot_first_time(p))
		note("the perf map %s of process %d is over its cap (%u MiB, %u entries): "
		     "code named from its last part only", p,
		     (int)pid, PERFMAP_MAX_BYTES >> 20, PERFMAP_MAX_ENTRIES);
	perfmap_release(m);
	*m = fresh;
	return 0;
}

const char *perfmap_find(const struct perfmap *m, uint64_t addr, uint64_t *start)
{
	size_t lo = 0, hi = m->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (addr < m->v[mid].start)
			hi = mid;
		else if (addr >= m->v[mid].end)
			lo = mid + 1;
		else {
			if (start)
				*start = m->v[mid].start;
			return m->names + m->v[mid].name;
		}
	}
	return NULL;
}
