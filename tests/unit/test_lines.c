/*
 * test_lines.c — source lines and inlined frames (issue 16), below the
 * attacher: a location's lines replaced after the capture keep its id and
 * its interning, and encode as pprof wants an inline chain (one Line per
 * frame, innermost first, each Function with its file and start line; the
 * mapping's has_* flags) and decode back the same; dwlines reads this very
 * test binary's DWARF (an always_inline helper inside a noinline caller);
 * the perf map and debug link parsers take what is well formed and skip
 * the rest; MiniDebugInfo refuses what is not xz.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "model/profile.h"
#include "proto/profile.pb-c.h"
#include "unwind/debugfind.h"
#include "unwind/dwlines.h"
#include "unwind/minidebug.h"
#include "unwind/perfmap.h"
#include "writer/gzip.h"
#include "writer/pprof.h"

#define S(p, i) profile_string((p), (i))

/* A profile whose one location got a three-frame chain after the fact. */
static struct profile *chain_profile(uint64_t *loc)
{
	struct profile *p = profile_new();
	struct profile_mapping_in m = { 0x400000, 0x500000, 0, "/usr/bin/prog", "abcd", 1, 0, 0, 0 };
	struct profile_line sym = { 0, 0 }, chain[3];
	uint64_t mid, fsym, leaf, mid_fn, outer;
	int64_t v[1] = { 7 };

	assert_non_null(p);
	assert_int_equal(profile_add_sample_type(p, "samples", "count"), 0);
	mid = profile_add_mapping(p, &m);
	fsym = profile_intern_function(p, "outer", "outer", "", 0);
	sym.function_id = fsym;
	*loc = profile_intern_location(p, mid, 0x401234, &sym, 1);
	assert_true(mid && fsym && *loc);
	assert_int_equal(profile_add_sample(p, loc, 1, v, NULL, 0), 0);
	/* After the capture: innermost first, the out-of-line function last. */
	leaf = profile_intern_function(p, "helper", "helper", "/src/util.h", 5);
	mid_fn = profile_intern_function(p, "ns::middle(int)", "_ZN2ns6middleEi", "/src/mid.cc", 40);
	outer = profile_intern_function(p, "outer", "outer", "/src/main.c", 100);
	chain[0] = (struct profile_line){ leaf, 7 };
	chain[1] = (struct profile_line){ mid_fn, 44 };
	chain[2] = (struct profile_line){ outer, 120 };
	assert_int_equal(profile_location_set_lines(p, *loc, chain, 3), 0);
	assert_int_equal(profile_mapping_set_flags(p, mid, 1, 1, 1, 1), 0);
	return p;
}

static void test_set_lines_keeps_id(void **state)
{
	struct profile_line chain[3], bad = { 999, 1 };
	const struct profile_location *l;
	struct profile *p;
	uint64_t loc, again;

	(void)state;
	p = chain_profile(&loc);
	l = profile_location(p, loc);
	assert_int_equal(l->nlines, 3);
	assert_string_equal(S(p, profile_function(p, l->lines[0].function_id)->name), "helper");
	assert_string_equal(S(p, profile_function(p, l->lines[2].function_id)->name), "outer");
	/* Interning the new key finds the same location (the index was rebuilt). */
	memcpy(chain, l->lines, sizeof(chain));
	again = profile_intern_location(p, l->mapping_id, 0x401234, chain, 3);
	assert_int_equal(again, loc);
	/* A line naming no function is refused and changes nothing. */
	assert_int_equal(profile_location_set_lines(p, loc, &bad, 1), -1);
	assert_int_equal(profile_location(p, loc)->nlines, 3);
	assert_int_equal(profile_location_set_lines(p, 99, chain, 3), -1);
	/* Shorter lines reuse the space. */
	assert_int_equal(profile_location_set_lines(p, loc, &chain[2], 1), 0);
	assert_int_equal(profile_location(p, loc)->nlines, 1);
	assert_int_equal(profile_intern_location(p, l->mapping_id, 0x401234, &chain[2], 1), loc);
	profile_free(p);
}

static void test_chain_encoding(void **state)
{
	Perftools__Profiles__Profile *pb;
	const struct profile_location *a, *b;
	struct buf out, raw;
	struct profile *p, *q;
	uint64_t loc;
	size_t i, n;

	(void)state;
	p = chain_profile(&loc);
	buf_init(&out, 1 << 20);
	assert_int_equal(pprof_write(p, &out), 0);
	/* The wire form, as pprof reads it. */
	buf_init(&raw, 1 << 20);
	assert_int_equal(gzip_decompress(out.data, out.len, &raw), 0);
	pb = perftools__profiles__profile__unpack(NULL, raw.len, raw.data);
	assert_non_null(pb);
	assert_int_equal(pb->n_location, 1);
	assert_int_equal(pb->location[0]->n_line, 3);
	{
		static const char *want[3][2] = { { "helper", "/src/util.h" },
						  { "ns::middle(int)", "/src/mid.cc" },
						  { "outer", "/src/main.c" } };
		static const int64_t lines[3] = { 7, 44, 120 }, starts[3] = { 5, 40, 100 };

		for (i = 0; i < 3; i++) {
			Perftools__Profiles__Line *ln = pb->location[0]->line[i];
			Perftools__Profiles__Function *f = NULL;

			for (n = 0; n < pb->n_function; n++)
				if (pb->function[n]->id == ln->function_id)
					f = pb->function[n];
			assert_non_null(f);
			assert_int_equal(ln->line, lines[i]);
			assert_string_equal(pb->string_table[f->name], want[i][0]);
			assert_string_equal(pb->string_table[f->filename], want[i][1]);
			assert_int_equal(f->start_line, starts[i]);
		}
	}
	assert_true(pb->mapping[0]->has_functions && pb->mapping[0]->has_filenames &&
		    pb->mapping[0]->has_line_numbers && pb->mapping[0]->has_inline_frames);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	/* And back into the model: the same chain. */
	q = pprof_read(out.data, out.len);
	assert_non_null(q);
	profile_locations(q, &n);
	assert_int_equal(n, 1);
	a = profile_location(p, loc);
	b = profile_location(q, 1);
	assert_int_equal(a->nlines, b->nlines);
	for (i = 0; i < a->nlines; i++) {
		const struct profile_function *fa = profile_function(p, a->lines[i].function_id);
		const struct profile_function *fb = profile_function(q, b->lines[i].function_id);

		assert_int_equal(a->lines[i].line, b->lines[i].line);
		assert_string_equal(S(p, fa->name), S(q, fb->name));
		assert_string_equal(S(p, fa->system_name), S(q, fb->system_name));
		assert_string_equal(S(p, fa->filename), S(q, fb->filename));
		assert_int_equal(fa->start_line, fb->start_line);
	}
	assert_int_equal(profile_mapping(q, 1)->has_inline_frames, 1);
	buf_release(&raw);
	buf_release(&out);
	profile_free(q);
	profile_free(p);
}

/* DWARF of this binary: sum3() inlined into lines_probe(), at known lines. */
static volatile int probe_sink;
static int probe_line_inner, probe_line_call;

static inline __attribute__((always_inline)) int sum3(int x)
{
	probe_line_inner = __LINE__ + 1;
	return x * 3 + probe_sink;
}

__attribute__((noinline)) static int lines_probe(int x)
{
	probe_line_call = __LINE__ + 1;
	return sum3(x) + 1;
}

static uint64_t self_vaddr(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long s, e, off;
	char line[512], path[400];
	uint64_t v = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %399s", &s, &e, &off, path) == 4 &&
		    addr >= s && addr < e) {
			/* PIE and non-PIE alike: vaddr = addr - start + offset for the usual layouts. */
			v = addr - s + off;
			break;
		}
	}
	fclose(f);
	return v;
}

static void test_dwlines_self(void **state)
{
	struct dwlines_frame fr[DWLINES_MAX_FRAMES];
	struct dwlines *d;
	uint64_t addr = (uint64_t)(uintptr_t)lines_probe, va;
	size_t n, i;
	int found = 0;

	(void)state;
	assert_int_equal(lines_probe(1), 4 + probe_sink);
	d = dwlines_open(open("/proc/self/exe", O_RDONLY | O_CLOEXEC), 0);
	if (!d) {
		skip(); /* built without -g */
		return;
	}
	va = self_vaddr(addr);
	/* Some address of lines_probe lies inside the inlined sum3. */
	for (i = 0; i < 64 && !found; i++) {
		n = dwlines_lookup(d, va + i, fr, DWLINES_MAX_FRAMES);
		if (n == 2 && !strcmp(fr[0].name, "sum3")) {
			found = 1;
			assert_string_equal(fr[1].name, "lines_probe");
			assert_non_null(strstr(fr[0].file, "test_lines.c"));
			assert_true(fr[0].start_line > 0 && fr[0].start_line < probe_line_inner);
			assert_int_equal(fr[1].line, probe_line_call);
			assert_true(fr[1].start_line > 0 && fr[1].start_line < probe_line_call);
		}
	}
	assert_true(found);
	assert_int_equal(dwlines_lookup(d, 0x10, fr, DWLINES_MAX_FRAMES), 0);
	dwlines_free(d);
	/* Not DWARF: no dwlines. */
	assert_null(dwlines_open_mem("not an elf file at all", 22));
	assert_null(dwlines_open(-1, 0));
}

static void test_perfmap(void **state)
{
	static const char text[] =
		"7f0000001000 40 first\n"
		"0x7f0000002000 0x100 second with spaces\r\n"
		"garbage line\n"
		"7f0000003000 0 zero size\n"
		"ffffffffffffffff 10 wraps\n"
		"7f0000004000 20\n"
		"7f0000005000 80 old\n"
		"7f0000005040 80 new\n"
		"7f0000006000 10 ctl\x01name\n"
		"\n"
		"12345678901234567 10 too wide";
	struct perfmap m;
	uint64_t start = 0;

	(void)state;
	perfmap_init(&m);
	assert_int_equal(perfmap_parse(&m, text, sizeof(text) - 1), 0);
	assert_string_equal(perfmap_find(&m, 0x7f0000001000, &start), "first");
	assert_int_equal(start, 0x7f0000001000);
	assert_string_equal(perfmap_find(&m, 0x7f000000103f, NULL), "first");
	assert_null(perfmap_find(&m, 0x7f0000001040, NULL));
	assert_string_equal(perfmap_find(&m, 0x7f00000020ff, NULL), "second with spaces");
	assert_null(perfmap_find(&m, 0x7f0000003000, NULL));
	assert_null(perfmap_find(&m, 0x7f0000004000, NULL));
	/* The later line wins where they overlap; the earlier keeps what lies before it. */
	assert_string_equal(perfmap_find(&m, 0x7f0000005000, NULL), "old");
	assert_string_equal(perfmap_find(&m, 0x7f0000005040, &start), "new");
	assert_int_equal(start, 0x7f0000005040);
	assert_string_equal(perfmap_find(&m, 0x7f00000050bf, NULL), "new");
	assert_string_equal(perfmap_find(&m, 0x7f0000006000, NULL), "ctl?name");
	assert_int_equal(m.skipped, 5);
	perfmap_release(&m);
	/* Empty input, and a name cut at the cap. */
	assert_int_equal(perfmap_parse(&m, "", 0), 0);
	assert_int_equal(m.n, 0);
	{
		char *big = malloc(PERFMAP_MAX_NAME * 2 + 32);
		size_t k = (size_t)sprintf(big, "1000 10 ");

		memset(big + k, 'a', PERFMAP_MAX_NAME * 2);
		assert_int_equal(perfmap_parse(&m, big, k + PERFMAP_MAX_NAME * 2), 0);
		assert_int_equal(strlen(perfmap_find(&m, 0x1000, NULL)), PERFMAP_MAX_NAME);
		free(big);
	}
	perfmap_release(&m);
}

static void test_debuglink(void **state)
{
	static const unsigned char good[] = "prog.debug\0\0\x78\x56\x34\x12";
	static const unsigned char slash[] = "a/b.debug\0\0\0\x01\x02\x03\x04";
	static const unsigned char nonul[] = "abcdefghijkl";
	const char *name;
	uint32_t crc = 0;

	(void)state;
	assert_int_equal(debugfind_parse_link(good, sizeof(good) - 1, &name, &crc), 0);
	assert_string_equal(name, "prog.debug");
	assert_int_equal(crc, 0x12345678);
	assert_int_equal(debugfind_parse_link(slash, sizeof(slash) - 1, &name, &crc), -1);
	assert_int_equal(debugfind_parse_link(nonul, sizeof(nonul) - 1, &name, &crc), -1);
	assert_int_equal(debugfind_parse_link(good, 11, &name, &crc), -1); /* no room for the CRC */
	assert_string_equal(debug_how_name(DEBUG_LINK), "debuglink");
}

static void test_minidebug_garbage(void **state)
{
	static const unsigned char xz_magic_then_junk[] = "\xfd" "7zXZ\0junkjunkjunkjunk";

	(void)state;
	assert_null(minidebug_decode(NULL, 0));
	assert_null(minidebug_decode((const unsigned char *)"hello world!", 12));
	assert_null(minidebug_decode(xz_magic_then_junk, sizeof(xz_magic_then_junk) - 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_lines_keeps_id),
		cmocka_unit_test(test_chain_encoding),
		cmocka_unit_test(test_dwlines_self),
		cmocka_unit_test(test_perfmap),
		cmocka_unit_test(test_debuglink),
		cmocka_unit_test(test_minidebug_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
