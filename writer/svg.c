/*
 * svg.c — the flame graph's SVG. The stack tree (writer/folded.c) is
 * walked twice, skipping the subtrees of frames too narrow to draw: once
 * for the depth of the deepest drawn frame (the image's height, since the
 * root sits at the bottom), once to write the frames, each frame's group
 * nested in its parent's. A frame costs one title, one rectangle and one
 * label, about 225 bytes; everything interactive is the script of
 * svg_script.c, which reads the frames back from the document, so the
 * file holds each name only twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/fnv.h"
#include "model/profile.h"
#include "writer/folded.h"
#include "writer/svg.h"

#define FRAME_H 16  /* pixels per stack level */
#define FONT 12     /* font size, pixels */
#define FONT_W 0.59 /* average glyph width, in font sizes (Verdana) */
#define YPAD1 (FONT * 3)      /* above the frames: title and controls */
#define YPAD2 (FONT * 2 + 10) /* below them: the details line */
#define TEXT_LIMIT (1u << 16)  /* bytes of the caller's title or unit */

struct svg {
	const struct folded_tree *t;
	struct buf *out;
	int64_t total;   /* the root's */
	double scale;    /* pixels per unit of value */
	unsigned height; /* of the whole image */
	struct buf unit; /* the unit, cleaned and escaped once, not once per frame */
	struct buf name; /* a caller's string being cleaned */
};

/* Append s[0..n) with XML's five special characters as entities. */
static int put_xml(struct buf *out, const char *s, size_t n)
{
	size_t i, run = 0;
	const char *ent;
	int r = 0;

	for (i = 0; i < n && r == 0; i++) {
		switch (s[i]) {
		case '&': ent = "&amp;"; break;
		case '<': ent = "&lt;"; break;
		case '>': ent = "&gt;"; break;
		case '"': ent = "&quot;"; break;
		case '\'': ent = "&#39;"; break;
		default: run++; continue;
		}
		r = buf_append(out, s + i - run, run);
		if (r == 0)
			r = buf_append(out, ent, strlen(ent));
		run = 0;
	}
	return r ? r : buf_append(out, s + n - run, run);
}

/* A string from the caller, cleaned like a frame name, then escaped, to out. */
static int put_text(struct svg *g, struct buf *out, const char *s)
{
	g->name.len = 0;
	if (folded_clean(&g->name, s, strlen(s), 0) < 0)
		return -1;
	return put_xml(out, (const char *)g->name.data, g->name.len);
}

/* v with thousands separators, as flame graphs print counts: 1,234,567. */
static int put_count(struct buf *out, int64_t v)
{
	char d[32];
	int n = snprintf(d, sizeof(d), "%" PRId64, v), i, r = 0, neg = v < 0;

	for (i = 0; i < n && r == 0; i++) {
		r = buf_append(out, &d[i], 1);
		if (r == 0 && i >= neg && i + 1 < n && (n - 1 - i) % 3 == 0)
			r = buf_append(out, ",", 1);
	}
	return r;
}

/* Code points in s[0..n) (valid UTF-8: cleaned names are). */
static size_t utf8_count(const char *s, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* Bytes of the first k code points of s[0..n). */
static size_t utf8_prefix(const char *s, size_t n, size_t k)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && k-- == 0)
			break;
	return i;
}

/*
 * The label for a frame w pixels wide: the name if it fits, else as many
 * characters as fit less two and "..", else nothing — the same rule as
 * the script's fit(), so a label looks the same before and after a zoom.
 */
/*
 * A frame's value for people: a time or a size scaled to its unit (1.25 s,
 * 340.50 ms, 3.40 MiB), anything else counted with its unit (2,000
 * samples).
 */
static int put_value(struct svg *g, int64_t v)
{
	static const struct {
		const char *unit;
		double step[3];
		const char *name[4];
	} scales[] = {
		{ "nanoseconds", { 1e3, 1e6, 1e9 }, { "ns", "us", "ms", "s" } },
		{ "bytes", { 1024.0, 1048576.0, 1073741824.0 }, { "B", "KiB", "MiB", "GiB" } },
	};
	const char *u = g->unit.len ? (const char *)g->unit.data : "";
	double a = v < 0 ? -(double)v : (double)v;
	size_t i;
	int k;
	int r;

	for (i = 0; i < sizeof(scales) / sizeof(scales[0]); i++) {
		if (strcmp(u, scales[i].unit) != 0)
			continue;
		for (k = 3; k > 0 && a < scales[i].step[k - 1]; k--)
			;
		if (k == 0)
			return buf_printf(g->out, "%" PRId64 " %s", v, scales[i].name[0]);
		return buf_printf(g->out, "%.2f %s", (double)v / scales[i].step[k - 1],
				  scales[i].name[k]);
	}
	r = put_count(g->out, v);
	if (r == 0 && g->unit.len)
		r = buf_printf(g->out, " %s", u);
	return r;
}

static int put_label(struct svg *g, const char *s, size_t n, double w)
{
	double fit = (w - 6) / (FONT * FONT_W);
	size_t k = fit < 3 ? 0 : (size_t)fit;

	if (k == 0)
		return 0;
	if (utf8_count(s, n) <= k)
		return put_xml(g->out, s, n);
	if (put_xml(g->out, s, utf8_prefix(s, n, k - 2)) < 0)
		return -1;
	return buf_append(g->out, "..", 2);
}

/* flamegraph.pl's "hot" palette, picked by a hash of the name so colours are stable. */
static int put_color(struct buf *out, const char *s, size_t n)
{
	uint64_t h = fnv_bytes(FNV_OFFSET, s, n);

	h ^= h >> 29;
	return buf_printf(out, "rgb(%u,%u,%u)", 205 + (unsigned)((h & 0xff) * 50 / 255),
			  (unsigned)((h >> 8 & 0xff) * 230 / 255),
			  (unsigned)((h >> 16 & 0xff) * 55 / 255));
}

static int drawn(const struct svg *g, const struct folded_node *n)
{
	return n->total > 0 && (double)n->total * SVG_MIN_SHARE >= (double)g->total;
}

static int put_frame(struct svg *g, const struct folded_node *n)
{
	struct buf *out = g->out;
	double x = SVG_XPAD + (double)n->x * g->scale, w = (double)n->total * g->scale;
	unsigned y = g->height - YPAD2 - (n->depth + 1) * FRAME_H;
	const char *s = "all";
	size_t len = 3;
	int r;

	if (n->name != FOLDED_NONE)
		s = folded_tree_name(g->t, n->name, &len);
	r = buf_printf(out, "<g class=\"frame\" data-x=\"%" PRId64 "\" data-v=\"%" PRId64
		       "\" data-d=\"%u\"><title>", n->x, n->total, n->depth);
	if (r == 0)
		r = put_xml(out, s, len);
	if (r == 0)
		r = buf_append(out, " (", 2);
	if (r == 0)
		r = put_value(g, n->total);
	if (r == 0)
		r = buf_printf(out, ", %.2f%%)</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" "
			       "height=\"%u\" fill=\"", 100.0 * (double)n->total / (double)g->total,
			       x, y, w, FRAME_H - 1);
	if (r == 0)
		r = put_color(out, s, len);
	if (r == 0)
		r = buf_printf(out, "\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%.1f\">", x + 3,
			       y + 10.5);
	if (r == 0)
		r = put_label(g, s, len, w);
	return r ? r : buf_printf(out, "</text>\n"); /* the group stays open for the children */
}

/* Close n frame groups. */
static int put_close(struct buf *out, unsigned n)
{
	int r = 0;

	while (n-- > 0 && r == 0)
		r = buf_append(out, "</g>", 4);
	return r ? r : buf_append(out, "\n", 1);
}

static int put_head(struct svg *g, const char *title, unsigned width, unsigned height)
{
	int r;

	r = buf_printf(g->out,
		       "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
		       "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		       "xmlns=\"http://www.w3.org/2000/svg\">\n"
		       "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n"
		       "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" "
		       "x2=\"0\"><stop stop-color=\"#eeeeee\" offset=\"5%%\"/><stop "
		       "stop-color=\"#eeeeb0\" offset=\"95%%\"/></linearGradient></defs>\n"
		       "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" "
		       "fill=\"url(#background)\"/>\n<text id=\"title\" x=\"%u\" y=\"%u\">",
		       width, height, width, height, svg_style, width, height, width / 2,
		       FONT * 2);
	if (r == 0)
		r = put_text(g, g->out, title);
	return r ? r : buf_printf(g->out, "</text>\n");
}

/* The image for a profile without samples: a title and a sentence, no script. */
static int put_empty(struct svg *g, const char *title)
{
	if (put_head(g, title, SVG_WIDTH, 100) < 0)
		return -1;
	return buf_printf(g->out,
			  "<text id=\"nosamples\" x=\"%u\" y=\"60\" text-anchor=\"middle\">"
			  "No samples</text>\n</svg>\n", SVG_WIDTH / 2);
}

static int put_graph(struct svg *g, const char *title)
{
	const struct folded_node *nd = folded_tree_node(g->t, 0);
	unsigned maxdepth = 0, y, open = 0; /* frame groups open: the depth below the next frame */
	uint32_t n;
	int r;

	for (n = 0; n != FOLDED_NONE; n = folded_tree_next(g->t, n, drawn(g, &nd[n])))
		if (drawn(g, &nd[n]) && nd[n].depth > maxdepth)
			maxdepth = nd[n].depth;
	g->height = YPAD1 + (maxdepth + 1) * FRAME_H + YPAD2;
	y = g->height - 17;
	if (put_head(g, title, SVG_WIDTH, g->height) < 0)
		return -1;
	r = buf_printf(g->out,
		       "<text id=\"details\" x=\"%u\" y=\"%u\"> </text>\n"
		       "<text id=\"unzoom\" class=\"hide\" x=\"%u\" y=\"%u\">Reset Zoom</text>\n"
		       "<text id=\"search\" x=\"%u\" y=\"%u\">Search</text>\n"
		       "<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n<g id=\"frames\">\n",
		       SVG_XPAD, y, SVG_XPAD, FONT * 2, SVG_WIDTH - SVG_XPAD, FONT * 2,
		       SVG_WIDTH - SVG_XPAD, y);
	/*
	 * A frame's group holds its children's groups, so that hiding a frame
	 * hides its subtree in one change: the script's zoom then costs the
	 * frames it shows, not every frame in the file.
	 */
	for (n = 0; n != FOLDED_NONE && r == 0; n = folded_tree_next(g->t, n, drawn(g, &nd[n]))) {
		if (!drawn(g, &nd[n]))
			continue;
		if (open > nd[n].depth)
			r = put_close(g->out, open - nd[n].depth);
		if (r == 0)
			r = put_frame(g, &nd[n]);
		open = nd[n].depth + 1;
	}
	if (r == 0)
		r = put_close(g->out, open);
	if (r == 0)
		r = buf_printf(g->out, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n%s]]>"
			       "</script>\n</svg>\n", svg_script);
	return r;
}

int svg_write(const struct profile *p, size_t value, unsigned flags,
	      const char *const *group_by, const char *title, const char *unit, struct buf *out)
{
	struct folded_tree t;
	struct svg g;
	size_t save = out->len;
	int r = -1, saved;

	memset(&g, 0, sizeof(g));
	buf_init(&g.name, TEXT_LIMIT);
	buf_init(&g.unit, TEXT_LIMIT);
	if (folded_tree_build(&t, p, value, flags & FOLDED_LINES, group_by) < 0)
		goto err;
	g.t = &t;
	g.out = out;
	g.total = folded_tree_node(&t, 0)->total;
	g.scale = g.total > 0 ? (SVG_WIDTH - 2.0 * SVG_XPAD) / (double)g.total : 0;
	if (unit && put_text(&g, &g.unit, unit) < 0)
		goto err;
	r = g.total > 0 ? put_graph(&g, title ? title : "Flame Graph")
			: put_empty(&g, title ? title : "Flame Graph");
err:
	saved = errno;
	if (r < 0)
		buf_truncate(out, save);
	if (t.nnodes)
		folded_tree_release(&t);
	buf_release(&g.name);
	buf_release(&g.unit);
	errno = saved;
	return r;
}
