#ifndef CPROF_SVG_H
#define CPROF_SVG_H
/*
 * svg — a profile as an interactive flame graph in one self-contained SVG
 * file (inline CSS and JavaScript, nothing loaded from anywhere), in the
 * spirit of Brendan Gregg's flamegraph.pl and py-spy's output: the root
 * ("all") at the bottom, callees above their callers, one rectangle per
 * node of the stack tree of writer/folded.h, as wide as its inclusive
 * value. Hover shows a frame's name, value and share; a click zooms to a
 * frame ("Reset Zoom" or Escape goes back); "Search" (or Ctrl-F)
 * highlights frames whose name matches a regular expression and shows the
 * share they cover.
 *
 * Invariants:
 *  - frames are the nodes of folded_tree_build(p, value, flags): names cleaned
 *    to valid UTF-8 without control characters, merged by name path;
 *    siblings left to right by name, a node's own (self) value to the
 *    right of its children;
 *  - the image is SVG_WIDTH pixels wide; a node's rectangle is
 *    total / root total * (SVG_WIDTH - 2 * SVG_XPAD) wide, written with two
 *    decimals; nodes narrower than 1/SVG_MIN_SHARE of the root (0.1%) are
 *    left out with their subtrees, but their value stays in their parent's
 *    width;
 *  - each frame is one <g class="frame" data-x data-v data-d> element
 *    (x offset and value in profile units, depth with the root at 0)
 *    holding <title>NAME (VALUE UNIT, PERCENT%)</title>, a <rect>, a
 *    <text> with the name cut to fit and ending in "..", and then its
 *    children's frame elements: frames nest as the tree does, in
 *    depth-first order, so a frame's subtree is its element's content;
 *  - every string from the profile or the caller is XML-escaped (& < > "
 *    '), so any function name gives a well-formed file;
 *  - a profile whose total is 0 gives a valid SVG that says "No samples".
 */
#include <stddef.h>

#include "common/buf.h"

struct profile;

#define SVG_WIDTH 1200     /* pixels */
#define SVG_XPAD 10        /* pixels left and right of the frames */
#define SVG_MIN_SHARE 1000 /* frames under 1/1000 of the total are not drawn */

/*
 * Append the flame graph of p, weighted by sample value number value, to
 * out, frames named as flags (FOLDED_LINES, writer/folded.h) says, under
 * root frames of group_by's label keys (folded_tree_build(); NULL: none).
 * title (NULL: "Flame Graph") heads the image; unit (NULL or "":
 * none) follows values in titles, e.g. "samples" or "nanoseconds". 0, or
 * -1 (errno EINVAL: no such value; EFBIG: out or a tree cap is full;
 * ENOMEM), and then out is as it was.
 */
int svg_write(const struct profile *p, size_t value, unsigned flags,
	      const char *const *group_by, const char *title, const char *unit, struct buf *out);

/* The stylesheet and the script svg_write() embeds (writer/svg_script.c). */
extern const char svg_style[];
extern const char svg_script[];

#endif
