/*
 * test_options.c — the command-line value parsers and option handling:
 * durations need a unit and must be positive, numbers are whole and in
 * range, and every bad value is refused rather than guessed at.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/kinds/kinds.h"
#include "attach/cli/options.h"
#include "common/err.h"

static uint64_t dur(const char *s)
{
	uint64_t ns = 0;

	assert_int_equal(parse_duration(s, &ns), 0);
	return ns;
}

static void test_duration_units(void **state)
{
	(void)state;
	assert_int_equal(dur("30s"), 30000000000ull);
	assert_int_equal(dur("500ms"), 500000000ull);
	assert_int_equal(dur("2m"), 120000000000ull);
	assert_int_equal(dur("1h"), 3600000000000ull);
	assert_int_equal(dur("250us"), 250000ull);
	assert_int_equal(dur("7ns"), 7ull);
	assert_int_equal(dur("1m30s"), 90000000000ull);
	assert_int_equal(dur("1h2m3s4ms"), 3723004000000ull);
	assert_int_equal(dur("1.5s"), 1500000000ull);
	assert_int_equal(dur("0.25ms"), 250000ull);
	assert_int_equal(dur(".5s"), 500000000ull);
	/* A bare number is seconds (sleep 30, timeout 30). */
	assert_int_equal(dur("30"), 30000000000ull);
	assert_int_equal(dur("1.5"), 1500000000ull);
}

static void test_duration_rejects(void **state)
{
	static const char *bad[] = {
		"", "s", "-5s", "+5s", "0s", "0ms", "5 s", "5x", "5sec", "1..5s", "0", "30 ", ".",
		"5s ", " 5s", "ms", "10d", "1e3s", "169h", "99999999999999999999h", "1m30",
	};
	uint64_t ns = 42;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse_duration(bad[i], &ns) == 0)
			fail_msg("duration \"%s\" accepted as %llu ns", bad[i], (unsigned long long)ns);
	}
	assert_int_equal(ns, 42); /* untouched on failure */
	assert_int_equal(parse_duration(NULL, &ns), -1);
}

static void test_duration_limit(void **state)
{
	uint64_t ns;

	(void)state;
	assert_int_equal(parse_duration("168h", &ns), 0);
	assert_int_equal(ns, OPT_MAX_DURATION_NS);
	assert_int_equal(parse_duration("168h1ns", &ns), -1);
}

static void test_uint(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse_uint("100", 1, 10000, 0, &v), 0);
	assert_int_equal(v, 100);
	assert_int_equal(parse_uint("64K", 4096, 1 << 20, 1, &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(parse_uint("1M", 4096, 1 << 20, 1, &v), 0);
	assert_int_equal(v, 1 << 20);
	assert_int_equal(parse_uint("64K", 4096, 1 << 20, 0, &v), -1); /* no suffix allowed */
	assert_int_equal(parse_uint("2M", 4096, 1 << 20, 1, &v), -1);  /* above max */
	assert_int_equal(parse_uint("0", 1, 10, 0, &v), -1);
	assert_int_equal(parse_uint("-1", 1, 10, 0, &v), -1);
	assert_int_equal(parse_uint("", 1, 10, 0, &v), -1);
	assert_int_equal(parse_uint("1x", 1, 10, 0, &v), -1);
	assert_int_equal(parse_uint("99999999999999999999999", 1, 10, 0, &v), -1);
	assert_int_equal(parse_uint("18014398509481984K", 0, UINT64_MAX, 1, &v), -1);
}

static int parse(struct options *o, int argc, char **argv)
{
	return options_parse(o, argc, argv);
}

static void test_defaults(void **state)
{
	char *argv[] = { "cprof-attach", "-p", "123", NULL };
	struct options o;

	(void)state;
	assert_int_equal(parse(&o, 3, argv), 0);
	assert_int_equal(o.pid, 123);
	assert_int_equal(o.duration_ns, 30000000000ull);
	assert_int_equal(o.hz, 100);
	assert_string_equal(o.kind->name, "cpu");
	assert_null(o.output);
	assert_int_equal(o.stack_cap, 65536);
	assert_int_equal(o.sampler, SAMPLER_AUTO);
}

static void test_all_options(void **state)
{
	char *argv[] = { "cprof-attach", "--pid=77", "-d", "2m", "-F", "997", "-o", "-",
			 "-t", "cpu", "--stack-size", "128K", "--stats", "-q", "--sampler", "ptrace",
			 NULL };
	char *perf[] = { "cprof-attach", "-p", "1", "--sampler=perf", NULL };
	struct options o;

	(void)state;
	assert_int_equal(parse(&o, 4, perf), 0);
	assert_int_equal(o.sampler, SAMPLER_PERF);
	assert_false(o.stack_given);
	assert_int_equal(parse(&o, 16, argv), 0);
	assert_int_equal(o.sampler, SAMPLER_PTRACE);
	assert_true(o.stack_given);
	assert_int_equal(o.pid, 77);
	assert_int_equal(o.duration_ns, 120000000000ull);
	assert_int_equal(o.hz, 997);
	assert_string_equal(o.output, "-");
	assert_int_equal(o.stack_cap, 128 * 1024);
	assert_true(o.stats);
	assert_true(o.quiet);
}

static void test_usage_errors(void **state)
{
	char *no_pid[] = { "cprof-attach", "-d", "1s", NULL };
	char *bad_type[] = { "cprof-attach", "-p", "1", "-t", "nope", NULL };
	char *extra[] = { "cprof-attach", "-p", "1", "x", NULL };
	char *bad_hz[] = { "cprof-attach", "-p", "1", "-F", "10001", NULL };
	char *missing[] = { "cprof-attach", "-p", NULL };
	char *bad_sampler[] = { "cprof-attach", "-p", "1", "--sampler", "ebpf", NULL };
	char *wall_sampler[] = { "cprof-attach", "-p", "1", "-t", "wall", "--sampler", "perf", NULL };
	struct options o;

	(void)state;
	err_set_quiet(1);
	assert_int_equal(parse(&o, 3, no_pid), -1);
	assert_int_equal(parse(&o, 5, bad_type), -1);
	assert_int_equal(parse(&o, 4, extra), -1);
	assert_int_equal(parse(&o, 5, bad_hz), -1);
	assert_int_equal(parse(&o, 2, missing), -1);
	assert_int_equal(parse(&o, 5, bad_sampler), -1);
	/* wall and threads keep ptrace: --sampler is theirs to refuse. */
	assert_int_equal(parse(&o, 7, wall_sampler), -1);
}

/* run: several types, the command line after the options (with or without --), its refusals. */
static void test_run(void **state)
{
	char *two[] = { "cprof-attach", "run", "-t", "cpu,heap", "-o", "p.pb.gz", "--", "./x", "-t",
			"y", NULL };
	char *bare[] = { "cprof-attach", "run", "-t", "heap", "./x", "-p", "1", NULL };
	char *no_cmd[] = { "cprof-attach", "run", "-t", "heap", NULL };
	char *with_pid[] = { "cprof-attach", "run", "-p", "1", "--", "./x", NULL };
	char *threads[] = { "cprof-attach", "run", "-t", "threads", "--", "./x", NULL };
	char *twice[] = { "cprof-attach", "run", "-t", "cpu,cpu", "--", "./x", NULL };
	char *stdout_two[] = { "cprof-attach", "run", "-t", "cpu,heap", "-o", "-", "--", "./x", NULL };
	char *record_two[] = { "cprof-attach", "-p", "1", "-t", "cpu,heap", NULL };
	char *unknown[] = { "cprof-attach", "run", "-t", "cpu,nope", "--", "./x", NULL };
	char *hz_heap[] = { "cprof-attach", "run", "-t", "heap", "-F", "99", "--", "./x", NULL };
	char *hz_cpu[] = { "cprof-attach", "run", "-t", "heap,cpu", "-F", "99", "--", "./x", NULL };
	struct options o;

	(void)state;
	err_set_quiet(0);
	assert_int_equal(parse(&o, 10, two), 0);
	assert_int_equal(o.nkinds, 2);
	assert_string_equal(o.kinds[0]->name, "cpu");
	assert_string_equal(o.kinds[1]->name, "heap");
	assert_string_equal(o.kind->name, "cpu");
	assert_string_equal(o.cmd[0], "./x");
	assert_string_equal(o.cmd[1], "-t"); /* CMD's own options are its own */
	assert_null(o.cmd[3]);
	assert_int_equal(parse(&o, 7, bare), 0);
	assert_string_equal(o.cmd[0], "./x");
	assert_string_equal(o.cmd[1], "-p");
	assert_int_equal(o.pid, 0);
	assert_int_equal(parse(&o, 9, hz_cpu), 0);
	assert_int_equal(o.hz, 99);
	err_set_quiet(1);
	assert_int_equal(parse(&o, 4, no_cmd), -1);
	assert_int_equal(parse(&o, 6, with_pid), -1);
	assert_int_equal(parse(&o, 6, threads), -1);
	assert_int_equal(parse(&o, 6, twice), -1);
	assert_int_equal(parse(&o, 8, stdout_two), -1);
	assert_int_equal(parse(&o, 5, record_two), -1);
	assert_int_equal(parse(&o, 6, unknown), -1);
	assert_int_equal(parse(&o, 8, hz_heap), -1);
}

static void test_kinds(void **state)
{
	const struct kind *k;
	unsigned i, n;

	(void)state;
	k = kind_all(&n);
	assert_true(n >= 1);
	for (i = 0; i < n; i++)
		assert_ptr_equal(kind_find(k[i].name), &k[i]);
	assert_null(kind_find("CPU"));
	assert_null(kind_find(""));
	/* Rows carry their behaviour: kinds.h's invariants. */
	for (i = 0; i < n; i++) {
		assert_non_null(k[i].source);
		assert_non_null(k[i].source->capture);
		/* A kind that may fall back to ptrace has the ptrace policy to fall back with. */
		if (kind_takes(&k[i]) & KIND_TAKES_SAMPLER)
			assert_non_null(k[i].policy);
		assert_false(k[i].policy && k[i].view); /* a policy or a view, not both */
		if (k[i].source->can & SOURCE_CLOCK)
			assert_non_null(k[i].policy);
		else if (k[i].source == &source_segment)
			assert_non_null(k[i].view);
		else
			assert_true(!k[i].policy && !k[i].view); /* its own bookkeeping (offcpu) */
		if (k[i].formats & FORMAT_TEXT)
			assert_non_null(k[i].text);
		assert_true((k[i].formats & FORMAT_STACKS) == FORMAT_STACKS);
		assert_non_null(k[i].types.sample[0][0]);
	}
}

static void test_formats(void **state)
{
	const struct format *f;
	unsigned i, n, bits = 0;

	(void)state;
	f = format_all(&n);
	assert_true(n >= 1);
	assert_string_equal(f[0].name, "pprof");
	for (i = 0; i < n; i++) {
		assert_ptr_equal(format_find(f[i].name), &f[i]);
		assert_non_null(f[i].write);
		assert_non_null(f[i].ext);
		assert_int_equal(bits & f[i].bit, 0); /* one bit each */
		bits |= f[i].bit;
	}
	/* An unknown name is no format, never a stand-in. */
	assert_null(format_find("svgz"));
	assert_null(format_find(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_units),
		cmocka_unit_test(test_duration_rejects),
		cmocka_unit_test(test_duration_limit),
		cmocka_unit_test(test_uint),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_all_options),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_run),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_formats),
	};

	/* options_parse prints usage errors on stderr; keep test output clean. */
	if (!freopen("/dev/null", "w", stderr))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
