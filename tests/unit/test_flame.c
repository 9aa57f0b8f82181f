/*
 * test_flame.c — the flame graph writers against hand-built profiles. The
 * folded form: exact output (stacks merged by name whatever their
 * addresses and labels, inlined lines as frames, unknown functions as
 * 0xADDR, ';' replaced, zero and negative stacks left out, frame-wise
 * order), every line parsed by flamegraph.pl's rule even with hostile
 * names, long names cut. The SVG: one frame element per drawn node,
 * nested as the tree, widths proportional to value, narrow frames left
 * out, names and titles escaped, labels cut to fit, a valid
 * image for an empty profile, a clean failure when the buffer is too
 * small, and 10,000 distinct stacks written quickly.
 */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/buf.h"
#include "model/profile.h"
#include "writer/folded.h"
#include "writer/svg.h"

/*
 * CPU seconds the large tests may take: a guard against a step quadratic
 * in the stacks (minutes), not a speed test. They take 0.2-0.4 s at -O2
 * on the 2-CPU test machine, a few times that under ASan; measured as the
 * process's CPU time so that a loaded machine does not make them fail.
 * Valgrind builds raise it (-DFLAME_MAX_SECONDS=600).
 */
#ifndef FLAME_MAX_SECONDS
#define FLAME_MAX_SECONDS 30.0
#endif

/* A profile with sample types samples/count and cpu/nanoseconds. */
static struct profile *new_profile(void)
{
	struct profile *p = profile_new();

	assert_non_null(p);
	assert_int_equal(profile_add_sample_type(p, "samples", "count"), 0);
	assert_int_equal(profile_add_sample_type(p, "cpu", "nanoseconds"), 1);
	return p;
}

/* A location at addr in function fn (NULL: no lines at all). */
static uint64_t loc(struct profile *p, uint64_t addr, const char *fn)
{
	struct profile_line l = { 0, 0 };
	uint64_t id;

	if (fn) {
		l.function_id = profile_intern_function(p, fn, fn, "", 0);
		assert_true(l.function_id != 0);
	}
	id = profile_intern_location(p, 0, addr, fn ? &l : NULL, fn ? 1 : 0);
	assert_true(id != 0);
	return id;
}

static void add(struct profile *p, const uint64_t *ids, size_t n, int64_t count, int64_t ns,
		const char *thread)
{
	struct profile_label_in l = { "thread", thread, 0, NULL };
	int64_t v[2] = { count, ns };

	assert_int_equal(profile_add_sample(p, ids, n, v, thread ? &l : NULL, thread ? 1 : 0), 0);
}

/* The profile of the exact tests; see the expected outputs below. */
static struct profile *fixture(void)
{
	struct profile *p = new_profile();
	struct profile_line two[2];
	uint64_t main_, work1, work2, leaf, inl, anon, unnamed, zero, neg;

	main_ = loc(p, 0x100, "main");
	work1 = loc(p, 0x200, "work");
	work2 = loc(p, 0x210, "work"); /* another address in the same function */
	leaf = loc(p, 0x300, "leaf;semi");
	two[0].function_id = profile_intern_function(p, "inner", "inner", "", 0); /* callee */
	two[0].line = 0;
	two[1].function_id = profile_intern_function(p, "outer", "outer", "", 0); /* caller */
	two[1].line = 0;
	inl = profile_intern_location(p, 0, 0x400, two, 2);
	anon = loc(p, 0xdead, NULL);
	unnamed = loc(p, 0x500, "");
	zero = loc(p, 0x600, "zero");
	neg = loc(p, 0x700, "neg");
	{
		uint64_t s1[] = { leaf, work1, main_ }, s2[] = { leaf, work2, main_ };
		uint64_t s3[] = { inl, main_ }, s4[] = { anon, main_ }, s5[] = { work1, main_ };
		uint64_t s6[] = { zero, main_ }, s7[] = { unnamed, main_ }, s9[] = { neg, main_ };

		add(p, s1, 3, 1, 10, "a");
		add(p, s2, 3, 2, 20, "b"); /* prints as s1: merged */
		add(p, s3, 2, 1, 5, NULL);
		add(p, s4, 2, 1, 7, NULL);
		add(p, s5, 2, 1, 3, NULL);
		add(p, s6, 2, 1, 0, NULL);
		add(p, s7, 2, 1, 4, NULL);
		add(p, NULL, 0, 1, 2, NULL);
		add(p, s9, 2, 1, -5, NULL);
	}
	return p;
}

static void test_folded_exact(void **state)
{
	struct profile *p = fixture();
	struct buf out;

	(void)state;
	buf_init(&out, 1 << 20);
	assert_int_equal(folded_write(p, 1, 0, NULL, &out), 0);
	assert_string_equal((char *)out.data,
			    "[no stack] 2\n"
			    "main;0x500 4\n"
			    "main;0xdead 7\n"
			    "main;outer;inner 5\n"
			    "main;work 3\n"
			    "main;work;leaf:semi 30\n");
	/* The other value: counts, so zero and negative stacks now show. */
	out.len = 0;
	assert_int_equal(folded_write(p, 0, 0, NULL, &out), 0);
	assert_string_equal((char *)out.data,
			    "[no stack] 1\n"
			    "main;0x500 1\n"
			    "main;0xdead 1\n"
			    "main;neg 1\n"
			    "main;outer;inner 1\n"
			    "main;work 1\n"
			    "main;work;leaf:semi 3\n"
			    "main;zero 1\n");
	buf_release(&out);
	profile_free(p);
}

/* A name longer than FOLDED_MAX_NAME is cut there and ends in "..". */
/*
 * Grouped by label keys: one root frame per key, "KEY=VALUE" (numbers
 * too) or "[no KEY]", in the keys' order; a key no sample has, and a
 * value with the separator, are handled; too many keys is EINVAL.
 */
static void test_folded_group_by(void **state)
{
	struct profile *p = new_profile();
	struct profile_label_in l[2] = { { "endpoint", "/a;b", 0, NULL }, { "tid", NULL, 7, NULL } };
	const char *by_endpoint[] = { "endpoint", "tid", NULL }, *by_none[] = { "nokey", NULL };
	const char *five[] = { "a", "b", "c", "d", "e", NULL };
	uint64_t s[2];
	int64_t v[2] = { 1, 10 };
	struct buf out;

	(void)state;
	s[1] = loc(p, 0x100, "main");
	s[0] = loc(p, 0x200, "work");
	assert_int_equal(profile_add_sample(p, s, 2, v, l, 2), 0);
	v[1] = 20;
	assert_int_equal(profile_add_sample(p, s, 2, v, &l[1], 1), 0);
	v[1] = 5;
	l[0].str = "/c";
	assert_int_equal(profile_add_sample(p, s, 1, v, l, 1), 0);
	buf_init(&out, 1 << 20);
	assert_int_equal(folded_write(p, 1, 0, by_endpoint, &out), 0);
	assert_string_equal((char *)out.data,
			    "[no endpoint];tid=7;main;work 20\n"
			    "endpoint=/a:b;tid=7;main;work 10\n"
			    "endpoint=/c;[no tid];work 5\n");
	out.len = 0;
	assert_int_equal(folded_write(p, 1, 0, by_none, &out), 0);
	assert_string_equal((char *)out.data, "[no nokey];main;work 30\n[no nokey];work 5\n");
	out.len = 0;
	errno = 0;
	assert_int_equal(folded_write(p, 1, 0, five, &out), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(out.len, 0);
	assert_int_equal(svg_write(p, 1, 0, by_endpoint, "t", "ns", &out), 0);
	assert_non_null(strstr((char *)out.data, "endpoint=/c"));
	buf_release(&out);
	profile_free(p);
}

static void test_folded_long_name(void **state)
{
	struct profile *p = new_profile();
	char *name = malloc(5001), *want = malloc(FOLDED_MAX_NAME + 16);
	uint64_t id;
	struct buf out;

	(void)state;
	assert_non_null(name);
	assert_non_null(want);
	memset(name, 'x', 5000);
	name[5000] = 0;
	id = loc(p, 0x10, name);
	add(p, &id, 1, 1, 1, NULL);
	memset(want, 'x', FOLDED_MAX_NAME - 2);
	snprintf(want + FOLDED_MAX_NAME - 2, 16, ".. 1\n");
	buf_init(&out, 1 << 20);
	assert_int_equal(folded_write(p, 0, 0, NULL, &out), 0);
	assert_string_equal((char *)out.data, want);
	buf_release(&out);
	free(name);
	free(want);
	profile_free(p);
}

static void test_folded_errors(void **state)
{
	struct profile *p = fixture();
	struct buf out;

	(void)state;
	buf_init(&out, 1 << 20);
	assert_int_equal(buf_printf(&out, "keep"), 0);
	errno = 0;
	assert_int_equal(folded_write(p, 2, 0, NULL, &out), -1); /* no third value */
	assert_int_equal(errno, EINVAL);
	assert_string_equal((char *)out.data, "keep");
	buf_release(&out);
	buf_init(&out, 40); /* too small: fails whole, never overruns */
	assert_int_equal(buf_printf(&out, "keep"), 0);
	assert_int_equal(folded_write(p, 1, 0, NULL, &out), -1);
	assert_int_equal(errno, EFBIG);
	assert_int_equal(out.len, 4);
	assert_string_equal((char *)out.data, "keep");
	buf_release(&out);
	profile_free(p);
}

/* Every line parses with ^(.*)\s+(\d+)$ into the expected stack and value. */
static void test_folded_hostile(void **state)
{
	static const char *names[] = {
		"a b 12", "line\nbreak", "tab\there", "cr\rx", "semi;colon", "trailing ", "  ",
		"\x01\x7f", "\xff\xfe bad", "cut\xe2\x82", "h\xc3\xa9llo", "nel\xc2\x85",
		"std::vector<int, std::allocator<int> >::push_back(int const&)", "99", "x 1 2 3",
		"\xed\xa0\x80surrogate", "\xef\xbf\xbf",
	};
	static const char *want[] = {
		"a b 12", "line?break", "tab?here", "cr?x", "semi:colon", "trailing ", "  ",
		"??", "?? bad", "cut??", "h\xc3\xa9llo", "nel??",
		"std::vector<int, std::allocator<int> >::push_back(int const&)", "99", "x 1 2 3",
		"???surrogate", "???",
	};
	size_t n = sizeof(names) / sizeof(names[0]), i, lines = 0;
	struct profile *p = new_profile();
	regmatch_t m[3];
	struct buf out;
	regex_t re;
	char *line, *save = NULL, stack[256];

	(void)state;
	for (i = 0; i < n; i++) {
		uint64_t s[2] = { loc(p, 0x1000 + i, names[i]), loc(p, 0x10, "root") };

		add(p, s, 2, 1, (int64_t)(i + 1) * 11, NULL);
	}
	buf_init(&out, 1 << 20);
	assert_int_equal(folded_write(p, 1, 0, NULL, &out), 0);
	assert_int_equal(regcomp(&re, "^(.*)[[:space:]]+([0-9]+)$", REG_EXTENDED), 0);
	for (line = strtok_r((char *)out.data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), lines++) {
		long v;

		assert_int_equal(regexec(&re, line, 3, m, 0), 0);
		v = strtol(line + m[2].rm_so, NULL, 10);
		assert_true(v % 11 == 0 && v / 11 >= 1 && (size_t)(v / 11) <= n);
		i = (size_t)(v / 11) - 1;
		snprintf(stack, sizeof(stack), "root;%s", want[i]);
		assert_int_equal((int)(m[1].rm_eo - m[1].rm_so), (int)strlen(stack));
		assert_memory_equal(line + m[1].rm_so, stack, strlen(stack));
	}
	assert_int_equal(lines, n);
	regfree(&re);
	buf_release(&out);
	profile_free(p);
}

/*
 * The SVG must parse as XML: every '<' starts markup (a tag, "<?", "<!" or
 * a CDATA section, skipped whole) and every '&' an entity of ours, and no
 * byte is a control character or the start of invalid UTF-8.
 */
static void assert_xmlish(const char *s)
{
	static const char *ents[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&#39;" };
	const char *end;
	size_t i, k;
	int ok;

	assert_memory_equal(s, "<?xml ", 6);
	for (i = 0; s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		assert_true(c >= 0x20 || c == '\n');
		assert_true(c != 0x7f && c != 0xff && c != 0xfe);
		if (!strncmp(s + i, "<![CDATA[", 9)) {
			end = strstr(s + i, "]]>");
			assert_non_null(end);
			i = (size_t)(end - s) + 2;
		} else if (c == '<') {
			c = (unsigned char)s[i + 1];
			assert_true(c == '/' || c == '?' || c == '!' || (c >= 'a' && c <= 'z'));
		} else if (c == '&') {
			for (k = 0, ok = 0; k < 5; k++)
				ok |= !strncmp(s + i, ents[k], strlen(ents[k]));
			assert_true(ok);
		}
	}
	end = s + i;
	assert_true(i > 7 && !strcmp(end - 7, "</svg>\n"));
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (s = strstr(s, what); s; s = strstr(s + 1, what))
		n++;
	return n;
}

/* The width="" of the rectangle after the frame titled title. */
static double width_of(const char *svg, const char *title)
{
	const char *t = strstr(svg, title), *w;

	assert_non_null(t);
	w = strstr(t, "width=\"");
	assert_non_null(w);
	return strtod(w + 7, NULL);
}

/* The label (<text> content) of the frame titled title. */
static const char *label_of(const char *svg, const char *title)
{
	static char label[256];
	const char *t = strstr(svg, title), *a, *b;

	assert_non_null(t);
	a = strstr(t, "<text ");
	assert_non_null(a);
	a = strchr(a, '>') + 1;
	b = strstr(a, "</text>");
	assert_non_null(b);
	assert_true((size_t)(b - a) < sizeof(label));
	memcpy(label, a, (size_t)(b - a));
	label[b - a] = 0;
	return label;
}

static void test_svg_frames(void **state)
{
	struct profile *p = new_profile();
	uint64_t m = loc(p, 0x10, "main"), a = loc(p, 0x20, "a"), b = loc(p, 0x30, "b<int>&co");
	uint64_t c = loc(p, 0x40, "c"), tiny = loc(p, 0x50, "tiny");
	uint64_t sa[] = { a, m }, sb[] = { b, m }, sc[] = { c, m }, st[] = { tiny, m };
	struct buf out;
	const char *s;

	(void)state;
	add(p, sa, 2, 1000, 0, NULL);
	add(p, sb, 2, 500, 0, NULL);
	add(p, sc, 2, 499, 0, NULL);
	add(p, st, 2, 1, 0, NULL); /* 0.05%: not drawn, but counted in main */
	buf_init(&out, 1 << 20);
	assert_int_equal(svg_write(p, 0, 0, NULL, "t<&>\"'", "samples", &out), 0);
	s = (const char *)out.data;
	assert_xmlish(s);
	assert_int_equal(count(s, "<g class=\"frame\""), 5); /* all, main, a, b, c */
	assert_null(strstr(s, "tiny"));
	assert_non_null(strstr(s, "<text id=\"title\" x=\"600\" y=\"24\">t&lt;&amp;&gt;&quot;&#39;</text>"));
	assert_non_null(strstr(s, "<title>b&lt;int&gt;&amp;co (500 samples, 25.00%)</title>"));
	assert_null(strstr(s, "b<int>"));
	/* Widths: share * (1200 - 2 * 10) pixels, the tiny frame's value still in main. */
	assert_true(width_of(s, "<title>all (2,000 samples, 100.00%)") == 1180.0);
	assert_true(width_of(s, "<title>main (2,000 samples, 100.00%)") == 1180.0);
	assert_true(width_of(s, "<title>a (1,000 samples, 50.00%)") == 590.0);
	assert_true(width_of(s, "<title>b&lt;int&gt;&amp;co (500") == 295.0);
	assert_true(width_of(s, "<title>c (499") == 294.41);
	/* Times and sizes for people: the same values in ns and in bytes. */
	buf_release(&out);
	buf_init(&out, 1 << 20);
	assert_int_equal(svg_write(p, 0, 0, NULL, "t", "nanoseconds", &out), 0);
	assert_non_null(strstr((const char *)out.data, "<title>all (2.00 us, 100.00%)"));
	assert_non_null(strstr((const char *)out.data, "<title>c (499 ns, "));
	buf_release(&out);
	buf_init(&out, 1 << 20);
	assert_int_equal(svg_write(p, 0, 0, NULL, "t", "bytes", &out), 0);
	assert_non_null(strstr((const char *)out.data, "<title>all (1.95 KiB, 100.00%)"));
	assert_non_null(strstr((const char *)out.data, "<title>c (499 B, "));
	buf_release(&out);
	buf_init(&out, 1 << 20);
	assert_int_equal(svg_write(p, 0, 0, NULL, "t<&>\"'", "samples", &out), 0);
	s = (const char *)out.data;
	/* Siblings by name, left to right: b starts where a ends. */
	assert_non_null(strstr(s, "data-x=\"1000\" data-v=\"500\" data-d=\"2\"><title>b&lt;"));
	assert_non_null(strstr(s, "25.00%)</title><rect x=\"600.00\""));
	/* Labels are cut to fit with "..": "b<int>&co" fits 295 px whole. */
	assert_non_null(strstr(s, ">b&lt;int&gt;&amp;co</text>"));
	/* Frames nest as the tree: main's group holds a, b and c; all's holds main. */
	assert_int_equal(count(s, "</g>"), 5 + 1); /* the frames and their container */
	assert_non_null(strstr(s, ">a</text>\n</g>\n<g class=\"frame\" data-x=\"1000\""));
	assert_non_null(strstr(s, ">c</text>\n</g></g></g>\n</g>\n<script type=\"text/ecmascript\">"
				  "<![CDATA["));
	assert_non_null(strstr(s, "Reset Zoom"));
	assert_non_null(strstr(s, ">Search</text>"));
	buf_release(&out);
	profile_free(p);
}

/* Names are cut with ".." to the width, and hostile names stay well-formed. */
static void test_svg_labels(void **state)
{
	struct profile *p = new_profile();
	uint64_t r = loc(p, 0x10, "root"), l = loc(p, 0x20, "a_rather_long_function_name_here");
	uint64_t h = loc(p, 0x30, "<\xff\x01&\"'>;\xe2\x82");
	uint64_t s1[] = { l, r }, s2[] = { h, r };
	struct buf out;
	const char *s;

	(void)state;
	add(p, s1, 2, 10, 0, NULL); /* 10 of 1000: 11.8 px, room for nothing */
	add(p, s2, 2, 990, 0, NULL);
	buf_init(&out, 1 << 20);
	assert_int_equal(svg_write(p, 0, 0, NULL, NULL, NULL, &out), 0);
	s = (const char *)out.data;
	assert_xmlish(s);
	assert_non_null(strstr(s, "<title>&lt;??&amp;&quot;&#39;&gt;;?? (990, 99.00%)</title>"));
	assert_non_null(strstr(s, ">Flame Graph</text>"));
	assert_string_equal(label_of(s, "<title>a_rather_long_function_name_here ("), "");
	buf_release(&out);
	/* At 1/10 of 1180 px: 118 px, (118 - 6) / 7.08 = 15 characters, 13 and "..". */
	profile_free(p);
	p = new_profile();
	r = loc(p, 0x10, "root");
	l = loc(p, 0x20, "a_rather_long_function_name_here");
	h = loc(p, 0x30, "z");
	{
		uint64_t t1[] = { l, r }, t2[] = { h, r };

		add(p, t1, 2, 1, 0, NULL);
		add(p, t2, 2, 9, 0, NULL);
	}
	buf_init(&out, 1 << 20);
	assert_int_equal(svg_write(p, 0, 0, NULL, "x", "", &out), 0);
	assert_string_equal(label_of((char *)out.data, "<title>a_rather_long_function_name_here ("),
			    "a_rather_long..");
	buf_release(&out);
	profile_free(p);
}

static void test_svg_empty(void **state)
{
	struct profile *p = new_profile();
	uint64_t m = loc(p, 0x10, "main");
	struct buf out;

	(void)state;
	buf_init(&out, 1 << 20);
	assert_int_equal(svg_write(p, 0, 0, NULL, "cpu", "samples", &out), 0);
	assert_xmlish((char *)out.data);
	assert_non_null(strstr((char *)out.data, ">No samples</text>"));
	assert_null(strstr((char *)out.data, "class=\"frame\""));
	/* Only zero values is no samples too. */
	add(p, &m, 1, 0, 0, NULL);
	out.len = 0;
	assert_int_equal(svg_write(p, 1, 0, NULL, "cpu", "samples", &out), 0);
	assert_non_null(strstr((char *)out.data, ">No samples</text>"));
	out.len = 0;
	assert_int_equal(folded_write(p, 1, 0, NULL, &out), 0);
	assert_int_equal(out.len, 0);
	buf_release(&out);
	profile_free(p);
}

static void test_svg_limit(void **state)
{
	struct profile *p = fixture();
	struct buf out;

	(void)state;
	buf_init(&out, 2000); /* the script alone is larger */
	assert_int_equal(buf_printf(&out, "keep"), 0);
	assert_int_equal(svg_write(p, 1, 0, NULL, "cpu", "samples", &out), -1);
	assert_int_equal(errno, EFBIG);
	assert_int_equal(out.len, 4);
	assert_string_equal((char *)out.data, "keep");
	assert_int_equal(svg_write(p, 5, 0, NULL, "cpu", "samples", &out), -1);
	assert_int_equal(errno, EINVAL);
	buf_release(&out);
	profile_free(p);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * 10,000 distinct stacks, 5 to 60 frames over 300 functions, the shape of
 * a real CPU profile: both writers stay fast (a quadratic step would take
 * minutes here) and the SVG stays well-formed.
 */
static void test_large(void **state)
{
	struct profile *p = new_profile();
	uint64_t fn[300], s[64];
	unsigned seed = 12345;
	size_t i, k, depth;
	double t0, t1, t2;
	struct buf out;
	char name[64];

	(void)state;
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "ns::function_%zu<T>", i);
		fn[i] = loc(p, 0x1000 + i * 16, name);
	}
	for (i = 0; i < 10000; i++) {
		seed = seed * 1103515245u + 12345u;
		depth = 5 + (seed >> 16) % 56;
		s[depth - 1] = fn[0]; /* one root, like _start */
		for (k = 0; k + 1 < depth; k++) {
			seed = seed * 1103515245u + 12345u;
			/* Shallow frames from few functions, so stacks share prefixes. */
			s[k] = fn[(seed >> 16) % (k + 1 < depth - 3 ? 300 : 3)];
		}
		add(p, s, depth, 1 + (int64_t)(seed >> 20) % 100, 0, NULL);
	}
	buf_init(&out, 1u << 30);
	t0 = now();
	assert_int_equal(folded_write(p, 0, 0, NULL, &out), 0);
	t1 = now();
	print_message("folded: %zu bytes, %zu lines in %.3f s\n", out.len, count((char *)out.data, "\n"),
		      t1 - t0);
	assert_true(count((char *)out.data, "\n") <= 10000);
	out.len = 0;
	t1 = now();
	assert_int_equal(svg_write(p, 0, 0, NULL, "large", "samples", &out), 0);
	t2 = now();
	print_message("svg: %zu bytes, %zu frames in %.3f s\n", out.len,
		      count((char *)out.data, "<g class=\"frame\""), t2 - t1);
	assert_xmlish((char *)out.data);
	assert_true(t1 - t0 < FLAME_MAX_SECONDS && t2 - t1 < FLAME_MAX_SECONDS);
	buf_release(&out);
	profile_free(p);
}

/*
 * 10,000 distinct stacks drawn as ~41,000 frames: 1,000 prefixes of 0.1%
 * each (50 x 20 functions), then a 40-frame chain, then one of 10 leaves
 * (0.01%, not drawn). The SVG's worst case: every level nearly full.
 */
static void test_large_wide(void **state)
{
	struct profile *p = new_profile();
	uint64_t a[50], b[20], chain[40], leaf[10], s[44];
	size_t i, k, frames;
	struct buf out;
	char name[64];
	double t0, t1;

	(void)state;
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "outer_%zu", i);
		a[i] = loc(p, 0x10000 + i, name);
	}
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "middle_%zu", i);
		b[i] = loc(p, 0x20000 + i, name);
	}
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "chain_%zu", i);
		chain[i] = loc(p, 0x30000 + i, name);
	}
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "leaf_%zu", i);
		leaf[i] = loc(p, 0x40000 + i, name);
	}
	for (i = 0; i < 10000; i++) {
		s[0] = leaf[i / 1000];
		for (k = 0; k < 40; k++)
			s[1 + k] = chain[39 - k];
		s[41] = b[(i / 50) % 20];
		s[42] = a[i % 50];
		s[43] = a[0]; /* the root function */
		add(p, s, 44, 1, 0, NULL);
	}
	buf_init(&out, 1u << 30);
	t0 = now();
	assert_int_equal(svg_write(p, 0, 0, NULL, "wide", "samples", &out), 0);
	t1 = now();
	frames = count((char *)out.data, "<g class=\"frame\"");
	print_message("svg: %zu bytes, %zu frames in %.3f s\n", out.len, frames, t1 - t0);
	assert_int_equal(frames, 1 + 1 + 50 + 1000 * 41);
	assert_null(strstr((char *)out.data, "leaf_"));
	assert_xmlish((char *)out.data);
	assert_true(t1 - t0 < FLAME_MAX_SECONDS);
	buf_release(&out);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_exact),
		cmocka_unit_test(test_folded_group_by),
		cmocka_unit_test(test_folded_long_name),
		cmocka_unit_test(test_folded_errors),
		cmocka_unit_test(test_folded_hostile),
		cmocka_unit_test(test_svg_frames),
		cmocka_unit_test(test_svg_labels),
		cmocka_unit_test(test_svg_empty),
		cmocka_unit_test(test_svg_limit),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_large_wide),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
