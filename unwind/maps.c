/*
 * maps.c — parse /proc/PID/maps into a sorted array that maps_find()
 * searches in O(log n). The text comes from the kernel but is treated as
 * untrusted (a test, a fuzzer or a future kernel may hand us anything):
 * every field is scanned with an explicit end pointer, a line that does not
 * match the format exactly is skipped and counted rather than guessed at,
 * and nothing is printed. The result is one allocation: the entry array
 * followed by the paths it points into, so release is a single free() and
 * a process with thousands of mappings costs two passes over the text and
 * no per-line malloc. Consecutive entries of the same file (a library is
 * mapped 4-5 times) share one copy of the path. maps_read() reads the whole
 * file first because the kernel only guarantees a consistent view per
 * read() call; parsing as we go would gain nothing and complicate errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "unwind/maps.h"


static const char deleted_suffix[] = " (deleted)";

/* One line's fields while parsing; path is a span of the input text. */
struct maps_line {
	struct map_entry e;
	const char *path;
	size_t path_len;
};

/* Growing list of parsed lines, paths kept as offsets into a buf. */
struct maps_tmp {
	struct map_entry *v;
	size_t *path_off;
	size_t n, cap;
	struct buf paths;
};

void maps_init(struct maps *m)
{
	m->v = NULL;
	m->n = 0;
	m->skipped = 0;
}

void maps_release(struct maps *m)
{
	free(m->v);
	maps_init(m);
}

static int maps_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parse hex digits at *p (before end) into *out; at least one, no overflow. */
static int maps_scan_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int d;

	if (s >= end || maps_hexval(*s) < 0)
		return -1;
	while (s < end && (d = maps_hexval(*s)) >= 0) {
		if (v > (UINT64_MAX >> 4))
			return -1;
		v = (v << 4) | (uint64_t)d;
		s++;
	}
	*p = s;
	*out = v;
	return 0;
}

static int maps_scan_dec(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0, d;

	if (s >= end || *s < '0' || *s > '9')
		return -1;
	while (s < end && *s >= '0' && *s <= '9') {
		d = (uint64_t)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		s++;
	}
	*p = s;
	*out = v;
	return 0;
}

/* Expect c at *p. */
static int maps_scan_char(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -1;
	(*p)++;
	return 0;
}

/* Skip a run of at least one space. */
static int maps_scan_spaces(const char **p, const char *end)
{
	if (*p >= end || **p != ' ')
		return -1;
	while (*p < end && **p == ' ')
		(*p)++;
	return 0;
}

static int maps_scan_perms(const char **p, const char *end, unsigned *perms)
{
	const char *s = *p;

	if (end - s < 4)
		return -1;
	*perms = 0;
	if (s[0] == 'r')
		*perms |= MAP_R;
	else if (s[0] != '-')
		return -1;
	if (s[1] == 'w')
		*perms |= MAP_W;
	else if (s[1] != '-')
		return -1;
	if (s[2] == 'x')
		*perms |= MAP_X;
	else if (s[2] != '-')
		return -1;
	if (s[3] == 'p')
		*perms |= MAP_P;
	else if (s[3] != 's')
		return -1;
	*p = s + 4;
	return 0;
}

/*
 * Parse one line, s..end, without its newline. 0 on success, -1 when the
 * line is malformed. The path is left as a span of the input.
 */
static int maps_parse_line(const char *s, const char *end, struct maps_line *l)
{
	uint64_t major, minor;
	size_t n;

	memset(l, 0, sizeof(*l));
	if (memchr(s, 0, (size_t)(end - s)))
		return -1; /* a NUL cannot be part of any field or path */
	if (maps_scan_hex(&s, end, &l->e.start) < 0 || maps_scan_char(&s, end, '-') < 0 ||
	    maps_scan_hex(&s, end, &l->e.end) < 0 || maps_scan_spaces(&s, end) < 0 ||
	    maps_scan_perms(&s, end, &l->e.perms) < 0 || maps_scan_spaces(&s, end) < 0 ||
	    maps_scan_hex(&s, end, &l->e.offset) < 0 || maps_scan_spaces(&s, end) < 0 ||
	    maps_scan_hex(&s, end, &major) < 0 || maps_scan_char(&s, end, ':') < 0 ||
	    maps_scan_hex(&s, end, &minor) < 0 || maps_scan_spaces(&s, end) < 0 ||
	    maps_scan_dec(&s, end, &l->e.inode) < 0)
		return -1;
	if (l->e.start >= l->e.end || major > UINT32_MAX || minor > UINT32_MAX)
		return -1;
	l->e.dev_major = (uint32_t)major;
	l->e.dev_minor = (uint32_t)minor;
	if (s < end && maps_scan_spaces(&s, end) < 0)
		return -1; /* junk glued to the inode */
	n = (size_t)(end - s);
	if (n >= sizeof(deleted_suffix) &&
	    memcmp(end - (sizeof(deleted_suffix) - 1), deleted_suffix, sizeof(deleted_suffix) - 1) == 0) {
		n -= sizeof(deleted_suffix) - 1;
		l->e.deleted = 1;
	}
	if (n >= MAPS_MAX_PATH)
		return -1; /* keep room for the NUL within MAPS_MAX_PATH */
	l->path = s;
	l->path_len = n;
	return 0;
}

static int maps_tmp_push(struct maps_tmp *t, const struct maps_line *l)
{
	size_t off;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct map_entry *v;
		size_t *po;

		if (cap > MAPS_MAX_ENTRIES)
			cap = MAPS_MAX_ENTRIES;
		v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return -1;
		t->v = v;
		po = realloc(t->path_off, cap * sizeof(*po));
		if (!po)
			return -1;
		t->path_off = po;
		t->cap = cap;
	}
	/* paths.data[0] is the shared "" (appended before the first push). */
	off = 0;
	if (l->path_len > 0) {
		size_t prev = t->n ? t->path_off[t->n - 1] : 0;
		const char *pp = (const char *)t->paths.data + prev;

		if (prev && strlen(pp) == l->path_len && memcmp(pp, l->path, l->path_len) == 0) {
			off = prev;
		} else {
			off = t->paths.len;
			if (buf_append(&t->paths, l->path, l->path_len) < 0 ||
			    buf_append(&t->paths, "", 1) < 0)
				return -1;
		}
	}
	t->v[t->n] = l->e;
	t->path_off[t->n] = off;
	t->n++;
	return 0;
}

int maps_parse(struct maps *m, const char *text, size_t len)
{
	struct maps_tmp t = { 0 };
	const char *p = text, *end = text + len, *nl;
	struct map_entry *out = NULL;
	struct maps_line l;
	size_t skipped = 0, i, arr;
	uint64_t last_end = 0;

	/* Paths may be as long as the text; entries are capped separately. */
	buf_init(&t.paths, len + 1);
	if (buf_append(&t.paths, "", 1) < 0)
		goto err;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			/* No newline: the text was cut; the path may be too. */
			skipped++;
			break;
		}
		if (maps_parse_line(p, nl, &l) < 0 || (t.n && l.e.start < last_end) ||
		    t.n >= MAPS_MAX_ENTRIES)
			skipped++;
		else if (maps_tmp_push(&t, &l) < 0)
			goto err;
		else
			last_end = l.e.end;
		p = nl + 1;
	}

	arr = t.n * sizeof(*out);
	out = malloc(arr + t.paths.len);
	if (!out)
		goto err;
	memcpy((char *)out + arr, t.paths.data, t.paths.len);
	for (i = 0; i < t.n; i++) {
		out[i] = t.v[i];
		out[i].path = (char *)out + arr + t.path_off[i];
	}
	free(m->v);
	m->v = out;
	m->n = t.n;
	m->skipped = skipped;
	free(t.v);
	free(t.path_off);
	buf_release(&t.paths);
	return 0;
err:
	free(t.v);
	free(t.path_off);
	buf_release(&t.paths);
	errno = ENOMEM;
	return -1;
}

int maps_read(struct maps *m, pid_t pid)
{
	char path[64];
	struct buf b;
	int fd = -1, saved;

	buf_init(&b, MAPS_MAX_TEXT);
	snprintf(path, sizeof(path), "/proc/%ld/maps", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto err;
	if (buf_read_fd(&b, fd) < 0)
		goto err;
	close(fd);
	fd = -1;
	if (maps_parse(m, (const char *)b.data, b.len) < 0)
		goto err;
	buf_release(&b);
	return 0;
err:
	saved = errno;
	if (fd >= 0)
		close(fd);
	buf_release(&b);
	errno = saved;
	return -1;
}

const struct map_entry *maps_find(const struct maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n, mid;

	/* Find the last entry with start <= addr. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= m->v[lo - 1].end)
		return NULL;
	return &m->v[lo - 1];
}
