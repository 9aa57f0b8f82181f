#ifndef CPROF_FOLDED_H
#define CPROF_FOLDED_H
/*
 * folded — a profile as a tree of stacks merged by frame name, and its
 * "collapsed stacks" text form, the input of flamegraph.pl, inferno and
 * speedscope: one line "root;caller;...;leaf VALUE" per distinct stack.
 * The tree is also what the SVG flame graph (writer/svg.h) draws.
 *
 * Invariants:
 *  - a frame is a function name (with FOLDED_LINES, "function (file:line)"
 *    where the line knows both); each line of a location is a frame of its
 *    own, the caller before its inlined callees; a location without lines,
 *    or a line whose function is unknown or has an empty name, is the
 *    frame "0xADDR" (lowercase hex); a sample without any location is the
 *    single frame "[no stack]";
 *  - names are cleaned before they are compared: bytes that are not valid
 *    UTF-8, control characters (C0, DEL, C1) and U+FFFE/U+FFFF become "?",
 *    so every name is valid UTF-8 and valid XML text; a name longer than
 *    FOLDED_MAX_NAME bytes is cut there and ends in "..";
 *  - stacks whose frames print the same are one node path, whatever their
 *    addresses, mappings or labels; a node's self value is the sum of the
 *    chosen sample value over the samples ending there, and a negative
 *    sum counts as 0 (flame graphs have no negative widths);
 *  - a node's total is its self plus its children's totals; the root (node
 *    0, no name) holds the sum of everything;
 *  - children are ordered by name (bytewise), so every output is
 *    deterministic; a child's x is its parent's x plus the totals of the
 *    siblings before it, so a node spans [x, x + total) of its parent;
 *  - every table is capped (FOLDED_MAX_NODES nodes); building past a cap
 *    fails with errno EFBIG and leaves nothing allocated.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct profile;

#define FOLDED_NONE UINT32_MAX        /* no node, no name */
#define FOLDED_MAX_NODES (1u << 22)   /* distinct stack prefixes */
#define FOLDED_MAX_NAME 4096          /* bytes of one cleaned name */
#define FOLDED_MAX_GROUP 4            /* label keys a tree is grouped by */

/* Clean-up rules for folded_clean() and folded_tree_build(). */
#define FOLDED_NO_SEMICOLON 1u        /* also turn ';' into ':' (the folded form's separator) */
#define FOLDED_LINES 2u               /* a line with a file and a line number is the frame
					 "function (file:line)", file's last component */

struct folded_node {
	uint32_t name;    /* name id, FOLDED_NONE for the root */
	uint32_t parent;  /* FOLDED_NONE for the root */
	uint32_t child;   /* first child in name order, or FOLDED_NONE */
	uint32_t sibling; /* next sibling in name order, or FOLDED_NONE */
	uint32_t depth;   /* root 0 */
	int64_t self, total, x;
};

struct folded_tree {
	struct buf nodes;  /* struct folded_node[nnodes]; node 0 is the root */
	struct buf text;   /* the names, each NUL-terminated */
	struct buf offs;   /* size_t[nnames]: where each name starts in text */
	size_t nnodes, nnames;
};

/*
 * Append s[0..n) to out with the clean-up rules above (invalid UTF-8 and
 * control characters to "?", and with FOLDED_NO_SEMICOLON ';' to ':').
 * No length cap. 0 or -1 (out full).
 */
int folded_clean(struct buf *out, const char *s, size_t n, unsigned flags);

/*
 * Build the tree of p's samples weighted by sample value number value,
 * names cleaned with flags, under the root frames of group_by's label keys
 * (a NULL-terminated list of at most FOLDED_MAX_GROUP keys; NULL or empty:
 * none). 0, or -1 with errno EINVAL (no such value, too many keys), EFBIG
 * (a cap) or ENOMEM; on failure t holds nothing to release.
 */
int folded_tree_build(struct folded_tree *t, const struct profile *p, size_t value,
		      unsigned flags, const char *const *group_by);

/* Free what a successful folded_tree_build() allocated. */
void folded_tree_release(struct folded_tree *t);

/* Node i (i < t->nnodes). */
const struct folded_node *folded_tree_node(const struct folded_tree *t, uint32_t i);

/* The name with id name, and its length in *len (may be NULL); "" for FOLDED_NONE. */
const char *folded_tree_name(const struct folded_tree *t, uint32_t name, size_t *len);

/*
 * The node after n in depth-first order (children by name): n's first
 * child when descend is set, else the next node outside n's subtree;
 * FOLDED_NONE after the last. Starting from the root (0) visits every
 * node once, so a walk costs O(nodes) and no recursion.
 */
uint32_t folded_tree_next(const struct folded_tree *t, uint32_t n, int descend);

/*
 * Append the collapsed stacks of p, weighted by sample value number value,
 * frames named as flags (FOLDED_LINES) says, grouped by group_by's label
 * keys as for folded_tree_build(), to out: one "frame;frame;...;frame VALUE\n" line per node with a positive
 * self value, root frame first, in depth-first order with siblings by name
 * (a stack before its extensions). Every line matches flamegraph.pl's
 * ^(.*)\s+(\d+)$ with the stack in the first group. An empty profile
 * appends nothing. 0, or -1 (errno as for folded_tree_build, or EFBIG
 * when out is full), and then out is as it was.
 */
int folded_write(const struct profile *p, size_t value, unsigned flags,
		 const char *const *group_by, struct buf *out);

#endif
