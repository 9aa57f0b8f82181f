/*
 * folded.c — the stack tree and the collapsed-stacks writer. Every frame's
 * name is cleaned and interned once per distinct profile string (or
 * address), so a sample costs one hash lookup per frame; children are
 * found through one hash map keyed by (parent, name). Ordering siblings by
 * name is two counting sorts, so building is linear in the frames of all
 * samples plus the names' sort; writing is one depth-first walk.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "common/u64map.h"
#include "model/profile.h"
#include "writer/folded.h"

#define TEXT_LIMIT (1u << 30) /* bytes of all names together */

struct builder {
	struct folded_tree *t;
	const struct profile *p;
	unsigned flags;
	uint32_t *by_string;   /* profile string index -> name id + 1, 0 when not yet */
	struct u64map by_addr; /* address -> name id of "0xADDR" */
	struct u64map by_fline; /* FOLDED_LINES: function id << 32 | line -> name id */
	struct u64map by_hash; /* name hash (+ probe) -> name id */
	struct u64map kids;    /* parent << 32 | name -> child node */
	struct buf scratch;    /* one name being cleaned */
	const char *const *group_by; /* label keys of the root frames */
	int64_t group_key[FOLDED_MAX_GROUP]; /* their string indexes in p, -1 when absent */
	size_t ngroup;
};

/*
 * The length of a valid UTF-8 sequence allowed in XML text at s (n bytes
 * left), or 0. Overlong forms, surrogates, code points past U+10FFFF, C1
 * controls and the non-characters U+FFFE/U+FFFF are refused: XML parsers
 * reject the file for any of them, and a browser then shows nothing.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp, min;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0 ||
	    cp == 0xfffe || cp == 0xffff)
		return 0;
	return len;
}

int folded_clean(struct buf *out, const char *s, size_t n, unsigned flags)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, len;
	int r = 0;

	/* Copy runs of good bytes at once; stop at each byte to replace. */
	while (i + run < n && r == 0) {
		unsigned char c = u[i + run];

		if (c >= 0x20 && c < 0x7f && !(c == ';' && (flags & FOLDED_NO_SEMICOLON))) {
			run++;
			continue;
		}
		len = c < 0x80 ? 0 : utf8_len(u + i + run, n - i - run);
		if (len) {
			run += len;
			continue;
		}
		r = buf_append(out, u + i, run);
		if (r == 0)
			r = buf_append(out, c == ';' ? ":" : "?", 1);
		i += run + 1;
		run = 0;
	}
	return r ? r : buf_append(out, u + i, run);
}

static struct folded_node *nodes(const struct folded_tree *t)
{
	return (struct folded_node *)t->nodes.data;
}

const struct folded_node *folded_tree_node(const struct folded_tree *t, uint32_t i)
{
	return &nodes(t)[i];
}

const char *folded_tree_name(const struct folded_tree *t, uint32_t name, size_t *len)
{
	const size_t *off = (const size_t *)t->offs.data;
	size_t end;

	if (name == FOLDED_NONE || name >= t->nnames) {
		if (len)
			*len = 0;
		return "";
	}
	end = name + 1 < t->nnames ? off[name + 1] : t->text.len;
	if (len)
		*len = end - off[name] - 1;
	return (const char *)t->text.data + off[name];
}

/* The id of the cleaned form of s[0..n), interned. 0 or -1. */
static int name_intern(struct builder *b, const char *s, size_t n, uint32_t *id)
{
	struct folded_tree *t = b->t;
	const char *have;
	size_t cut = n > FOLDED_MAX_NAME ? FOLDED_MAX_NAME - 2 : n, hlen, off;
	uint64_t h, k, v;

	b->scratch.len = 0;
	if (folded_clean(&b->scratch, s, cut, b->flags) < 0 ||
	    (cut < n && buf_append(&b->scratch, "..", 2) < 0))
		return -1;
	s = (const char *)b->scratch.data;
	n = b->scratch.len;
	h = fnv_bytes(FNV_OFFSET, s, n); /* FNV-1a: good enough for names spread by a hash map */
	/* Linear probing over the hash: a collision costs a compare, never a wrong merge. */
	for (k = 0;; k++) {
		if (!u64map_get(&b->by_hash, h + k, &v))
			break;
		have = folded_tree_name(t, (uint32_t)v, &hlen);
		if (hlen == n && !memcmp(have, s, n)) {
			*id = (uint32_t)v;
			return 0;
		}
	}
	off = t->text.len;
	if (t->nnames >= FOLDED_MAX_NODES) {
		errno = EFBIG;
		return -1;
	}
	if (buf_append(&t->text, s, n + 1) < 0 || buf_append(&t->offs, &off, sizeof(off)) < 0 ||
	    u64map_put(&b->by_hash, h + k, t->nnames) < 0)
		return -1;
	*id = (uint32_t)t->nnames++;
	return 0;
}

static int name_of_addr(struct builder *b, uint64_t addr, uint32_t *id)
{
	char hex[24];
	uint64_t v;
	int n;

	if (u64map_get(&b->by_addr, addr, &v)) {
		*id = (uint32_t)v;
		return 0;
	}
	n = snprintf(hex, sizeof(hex), "0x%" PRIx64, addr);
	if (name_intern(b, hex, (size_t)n, id) < 0 || u64map_put(&b->by_addr, addr, *id) < 0)
		return -1;
	return 0;
}

/* "function (file:line)", file's last component; 0 or -1. */
static int name_with_line(struct builder *b, const struct profile_function *f, int64_t line,
			  uint32_t *id)
{
	const char *file = profile_string(b->p, f->filename), *base = strrchr(file, '/');
	uint64_t key = (uint64_t)f->id << 32 | (uint32_t)line, v;
	struct buf tmp;
	int r;

	if (u64map_get(&b->by_fline, key, &v)) {
		*id = (uint32_t)v;
		return 0;
	}
	buf_init(&tmp, FOLDED_MAX_NAME + 64);
	r = buf_printf(&tmp, "%s (%s:%" PRId64 ")", profile_string(b->p, f->name),
		       base ? base + 1 : file, line);
	if (r == 0)
		r = name_intern(b, (const char *)tmp.data, tmp.len, id);
	buf_release(&tmp);
	if (r == 0 && u64map_put(&b->by_fline, key, *id) < 0)
		r = -1;
	return r;
}

/* The frame name of line k of loc, or of its address. */
static int name_of_line(struct builder *b, const struct profile_location *loc, size_t k,
			uint32_t *id)
{
	const struct profile_function *f = profile_function(b->p, loc->lines[k].function_id);
	const char *s;

	if (!f || f->name <= 0 || (size_t)f->name >= profile_nstrings(b->p))
		return name_of_addr(b, loc->address, id);
	if ((b->flags & FOLDED_LINES) && f->filename > 0 && loc->lines[k].line > 0 &&
	    loc->lines[k].line <= UINT32_MAX && profile_string(b->p, f->name)[0])
		return name_with_line(b, f, loc->lines[k].line, id);
	if (b->by_string[f->name]) {
		*id = b->by_string[f->name] - 1;
		return 0;
	}
	s = profile_string(b->p, f->name);
	if (!*s)
		return name_of_addr(b, loc->address, id);
	if (name_intern(b, s, strlen(s), id) < 0)
		return -1;
	b->by_string[f->name] = *id + 1;
	return 0;
}

/* The child of parent called name, made when missing. 0 or -1. */
static int node_child(struct builder *b, uint32_t *node, uint32_t name)
{
	struct folded_tree *t = b->t;
	struct folded_node n = { name, *node, FOLDED_NONE, FOLDED_NONE, 0, 0, 0, 0 };
	uint64_t key = (uint64_t)*node << 32 | name, v;

	if (u64map_get(&b->kids, key, &v)) {
		*node = (uint32_t)v;
		return 0;
	}
	if (t->nnodes >= FOLDED_MAX_NODES) {
		errno = EFBIG;
		return -1;
	}
	n.depth = nodes(t)[*node].depth + 1;
	if (buf_append(&t->nodes, &n, sizeof(n)) < 0 || u64map_put(&b->kids, key, t->nnodes) < 0)
		return -1;
	*node = (uint32_t)t->nnodes++;
	return 0;
}

/* The root frame of s for group key g: "KEY=VALUE", or "[no KEY]". 0 or -1. */
static int group_frame(struct builder *b, const struct profile_sample *s, size_t g,
		       uint32_t *id)
{
	const char *key = b->group_by[g];
	struct buf tmp;
	size_t i;
	int r;

	buf_init(&tmp, FOLDED_MAX_NAME + 64);
	for (i = 0; i < s->nlabels && s->labels[i].key != b->group_key[g]; i++)
		;
	if (b->group_key[g] < 0 || i == s->nlabels)
		r = buf_printf(&tmp, "[no %s]", key);
	else if (s->labels[i].str)
		r = buf_printf(&tmp, "%s=%s", key, profile_string(b->p, s->labels[i].str));
	else
		r = buf_printf(&tmp, "%s=%" PRId64, key, s->labels[i].num);
	if (r == 0)
		r = name_intern(b, (const char *)tmp.data, tmp.len, id);
	buf_release(&tmp);
	return r;
}

/* Follow (or make) the path of one sample from the root and add its value. */
static int add_sample(struct builder *b, const struct profile_sample *s, int64_t v)
{
	const struct profile_location *loc;
	uint32_t node = 0, name;
	size_t j, k;

	for (j = 0; j < b->ngroup; j++)
		if (group_frame(b, s, j, &name) < 0 || node_child(b, &node, name) < 0)
			return -1;
	if (!s->nlocations) {
		if (name_intern(b, "[no stack]", 10, &name) < 0 || node_child(b, &node, name) < 0)
			return -1;
	}
	/* Root first: the last location, and in each its caller line first. */
	for (j = s->nlocations; j-- > 0;) {
		loc = profile_location(b->p, s->location_ids[j]);
		if (!loc)
			continue;
		if (!loc->nlines) {
			if (name_of_addr(b, loc->address, &name) < 0 || node_child(b, &node, name) < 0)
				return -1;
			continue;
		}
		for (k = loc->nlines; k-- > 0;)
			if (name_of_line(b, loc, k, &name) < 0 || node_child(b, &node, name) < 0)
				return -1;
	}
	nodes(b->t)[node].self += v;
	return 0;
}

/* Stable counting sort of in[0..n) by key[in[i]] (each < nkeys) into out. 0 or -1. */
static int count_sort(const uint32_t *in, uint32_t *out, size_t n, const uint32_t *key,
		      size_t nkeys)
{
	size_t *cnt = calloc(nkeys + 1, sizeof(*cnt)), i, sum = 0, c;

	if (!cnt)
		return -1;
	for (i = 0; i < n; i++)
		cnt[key[in[i]]]++;
	for (i = 0; i <= nkeys; i++) {
		c = cnt[i];
		cnt[i] = sum;
		sum += c;
	}
	for (i = 0; i < n; i++)
		out[cnt[key[in[i]]]++] = in[i];
	free(cnt);
	return 0;
}

static int by_name(const void *a, const void *b, void *arg)
{
	const struct folded_tree *t = arg;

	return strcmp(folded_tree_name(t, *(const uint32_t *)a, NULL),
		      folded_tree_name(t, *(const uint32_t *)b, NULL));
}

/* Link children in name order, then compute totals and x offsets. 0 or -1. */
static int tree_finish(struct folded_tree *t)
{
	struct folded_node *nd = nodes(t);
	uint32_t *order = NULL, *rank = NULL, *key = NULL, *idx = NULL, *tmp = NULL, c, prev;
	size_t i, n = t->nnodes - 1; /* every node but the root */
	int64_t x;
	int r = -1;

	order = calloc(t->nnames + 1, sizeof(*order));
	rank = calloc(t->nnames + 1, sizeof(*rank));
	key = calloc(t->nnodes, sizeof(*key));
	idx = calloc(n + 1, sizeof(*idx));
	tmp = calloc(n + 1, sizeof(*tmp));
	if (!order || !rank || !key || !idx || !tmp)
		goto err;
	/*
	 * Sort the distinct names once (the only n log n step, over names, not
	 * frames), then nodes by (parent, name rank) with two linear passes.
	 */
	for (i = 0; i < t->nnames; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, t->nnames, sizeof(*order), by_name, t);
	for (i = 0; i < t->nnames; i++)
		rank[order[i]] = (uint32_t)i;
	for (i = 1; i < t->nnodes; i++)
		key[i] = rank[nd[i].name];
	for (i = 0; i < n; i++)
		idx[i] = (uint32_t)(i + 1);
	if (count_sort(idx, tmp, n, key, t->nnames) < 0)
		goto err;
	for (i = 1; i < t->nnodes; i++)
		key[i] = nd[i].parent;
	if (count_sort(tmp, idx, n, key, t->nnodes) < 0)
		goto err;
	for (i = 0, prev = FOLDED_NONE; i < n; prev = c, i++) {
		c = idx[i];
		if (prev != FOLDED_NONE && nd[prev].parent == nd[c].parent)
			nd[prev].sibling = c;
		else
			nd[nd[c].parent].child = c;
	}
	/* Children come after their parents, so one backward pass sums totals. */
	for (i = 0; i < t->nnodes; i++) {
		if (nd[i].self < 0)
			nd[i].self = 0;
		nd[i].total = nd[i].self;
	}
	for (i = t->nnodes; i-- > 1;)
		nd[nd[i].parent].total += nd[i].total;
	for (i = 0; i < t->nnodes; i++)
		for (x = nd[i].x, c = nd[i].child; c != FOLDED_NONE; c = nd[c].sibling) {
			nd[c].x = x;
			x += nd[c].total;
		}
	r = 0;
err:
	free(order);
	free(rank);
	free(key);
	free(idx);
	free(tmp);
	return r;
}

void folded_tree_release(struct folded_tree *t)
{
	buf_release(&t->nodes);
	buf_release(&t->text);
	buf_release(&t->offs);
	t->nnodes = t->nnames = 0;
}

/* The string index of each group key in p, -1 for a key no sample can carry. 0 or -1. */
static int group_resolve(struct builder *b, const char *const *group_by)
{
	size_t g, i, n = profile_nstrings(b->p);

	b->group_by = group_by;
	for (g = 0; group_by && group_by[g]; g++) {
		if (g == FOLDED_MAX_GROUP) {
			errno = EINVAL;
			return -1;
		}
		b->group_key[g] = -1;
		for (i = 1; i < n && b->group_key[g] < 0; i++)
			if (!strcmp(profile_string(b->p, (int64_t)i), group_by[g]))
				b->group_key[g] = (int64_t)i;
	}
	b->ngroup = g;
	return 0;
}

int folded_tree_build(struct folded_tree *t, const struct profile *p, size_t value,
		      unsigned flags, const char *const *group_by)
{
	struct folded_node root = { FOLDED_NONE, FOLDED_NONE, FOLDED_NONE, FOLDED_NONE, 0, 0, 0, 0 };
	const struct profile_sample *s;
	struct builder b;
	size_t n, i;
	int r = -1, saved;

	memset(t, 0, sizeof(*t));
	buf_init(&t->nodes, (size_t)FOLDED_MAX_NODES * sizeof(struct folded_node));
	buf_init(&t->text, TEXT_LIMIT);
	buf_init(&t->offs, (size_t)FOLDED_MAX_NODES * sizeof(size_t));
	memset(&b, 0, sizeof(b));
	b.t = t;
	b.p = p;
	b.flags = flags;
	u64map_init(&b.by_addr, FOLDED_MAX_NODES);
	u64map_init(&b.by_fline, FOLDED_MAX_NODES);
	u64map_init(&b.by_hash, FOLDED_MAX_NODES);
	u64map_init(&b.kids, FOLDED_MAX_NODES);
	buf_init(&b.scratch, FOLDED_MAX_NAME);
	if (value >= profile_nvalues(p)) {
		errno = EINVAL;
		goto err;
	}
	if (group_resolve(&b, group_by) < 0)
		goto err;
	b.by_string = calloc(profile_nstrings(p) + 1, sizeof(*b.by_string));
	if (!b.by_string || buf_append(&t->nodes, &root, sizeof(root)) < 0)
		goto err;
	t->nnodes = 1;
	s = profile_samples(p, &n);
	for (i = 0; i < n; i++)
		if (add_sample(&b, &s[i], s[i].values[value]) < 0)
			goto err;
	r = tree_finish(t);
err:
	saved = errno;
	free(b.by_string);
	u64map_release(&b.by_addr);
	u64map_release(&b.by_fline);
	u64map_release(&b.by_hash);
	u64map_release(&b.kids);
	buf_release(&b.scratch);
	if (r < 0)
		folded_tree_release(t);
	errno = saved;
	return r;
}

uint32_t folded_tree_next(const struct folded_tree *t, uint32_t n, int descend)
{
	const struct folded_node *nd = nodes(t);

	if (descend && nd[n].child != FOLDED_NONE)
		return nd[n].child;
	for (; n != 0 && n != FOLDED_NONE; n = nd[n].parent)
		if (nd[n].sibling != FOLDED_NONE)
			return nd[n].sibling;
	return FOLDED_NONE;
}

int folded_write(const struct profile *p, size_t value, unsigned flags,
		 const char *const *group_by, struct buf *out)
{
	struct folded_tree t;
	struct buf path, marks; /* the current stack's text; its length at each depth */
	const struct folded_node *nd;
	size_t save = out->len, len, *mark;
	const char *name;
	uint32_t n;
	int r = -1, saved;

	buf_init(&path, out->limit);
	buf_init(&marks, (size_t)FOLDED_MAX_NODES * sizeof(size_t));
	if (folded_tree_build(&t, p, value, FOLDED_NO_SEMICOLON | (flags & FOLDED_LINES),
			      group_by) < 0)
		goto err;
	nd = folded_tree_node(&t, 0);
	for (n = folded_tree_next(&t, 0, 1); n != FOLDED_NONE; n = folded_tree_next(&t, n, 1)) {
		/*
		 * mark[d - 1] is the length of the path down to the last node
		 * visited at depth d; n's ancestors are exactly those nodes at
		 * the smaller depths, so n's path starts with mark[depth - 2] bytes.
		 */
		mark = (size_t *)marks.data;
		path.len = nd[n].depth > 1 ? mark[nd[n].depth - 2] : 0;
		name = folded_tree_name(&t, nd[n].name, &len);
		if ((nd[n].depth > 1 && buf_append(&path, ";", 1) < 0) ||
		    buf_append(&path, name, len) < 0)
			goto err;
		if (marks.len < nd[n].depth * sizeof(size_t) &&
		    buf_append(&marks, &path.len, sizeof(path.len)) < 0)
			goto err;
		mark = (size_t *)marks.data;
		mark[nd[n].depth - 1] = path.len;
		if (nd[n].self > 0 &&
		    (buf_append(out, path.data, path.len) < 0 ||
		     buf_printf(out, " %" PRId64 "\n", nd[n].self) < 0))
			goto err;
	}
	r = 0;
err:
	saved = errno;
	if (r < 0)
		buf_truncate(out, save);
	if (t.nnodes)
		folded_tree_release(&t);
	buf_release(&path);
	buf_release(&marks);
	errno = saved;
	return r;
}
