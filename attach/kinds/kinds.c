/*
 * kinds.c — the table of profile types. Names and units follow Go's
 * runtime/pprof so that pprof users meet familiar labels: a CPU profile is
 * samples/count + cpu/nanoseconds with period type cpu/nanoseconds, and
 * the thread snapshot is the native counterpart of Go's goroutine profile
 * (threads/count, period 1).
 */
#include <string.h>

#include "attach/kinds/kinds.h"
#include "model/profile.h"

/* heap and allocs are the same data with a different default view, as in Go. */
#define HEAP_TYPES                                                                      \
	.sample = { { "alloc_objects", "count" }, { "alloc_space", "bytes" },          \
		    { "inuse_objects", "count" }, { "inuse_space", "bytes" } },        \
	.period_type = { "space", "bytes" }

static const struct kind kinds[] = {
	{
		.name = "cpu",
		.help = "where threads run on a CPU, weighted by the CPU time they used",
		.capture = capture_ptrace,
		.policy = POLICY_CPU,
		.duration = DURATION_WINDOW,
		.labels = LABEL_THREAD | LABEL_TID,
		.formats = FORMAT_STACKS,
		.sample = { { "samples", "count" }, { "cpu", "nanoseconds" } },
		.period_type = { "cpu", "nanoseconds" },
	},
	{
		.name = "wall",
		.help = "where threads spend wall-clock time, running or waiting",
		.capture = capture_ptrace,
		.policy = POLICY_WALL,
		.duration = DURATION_WINDOW,
		.labels = LABEL_THREAD | LABEL_TID | LABEL_STATE | LABEL_SYSCALL,
		.formats = FORMAT_STACKS,
		.sample = { { "samples", "count" }, { "wall", "nanoseconds" } },
		.period_type = { "wall", "nanoseconds" },
	},
	{
		.name = "threads",
		.help = "one snapshot of every thread's stack (like Go's goroutine profile)",
		.capture = capture_ptrace,
		.policy = POLICY_ONCE,
		.duration = DURATION_NONE,
		.labels = LABEL_THREAD | LABEL_STATE | LABEL_SYSCALL,
		.formats = FORMAT_STACKS | FORMAT_TEXT | FORMAT_DUMP,
		.sample = { { "threads", "count" } },
		.period_type = { "threads", "count" },
	},
	{
		.name = "heap",
		.help = "live heap by allocating stack (needs libcprof.so preloaded)",
		.capture = capture_segment,
		.policy = POLICY_SHIM,
		.duration = DURATION_DELTA,
		.values = VALUES_HEAP,
		.formats = FORMAT_STACKS | FORMAT_TEXT,
		HEAP_TYPES,
		.default_type = "inuse_space",
	},
	{
		.name = "allocs",
		.help = "all allocations by stack, freed or not (needs libcprof.so)",
		.capture = capture_segment,
		.policy = POLICY_SHIM,
		.duration = DURATION_DELTA,
		.values = VALUES_HEAP,
		.formats = FORMAT_STACKS | FORMAT_TEXT,
		HEAP_TYPES,
		.default_type = "alloc_space",
	},
	{
		.name = "threadcreate",
		.help = "where threads were created (needs libcprof.so)",
		.capture = capture_segment,
		.policy = POLICY_SHIM,
		.duration = DURATION_DELTA,
		.values = VALUES_THREADS,
		.formats = FORMAT_STACKS | FORMAT_TEXT,
		.sample = { { "threadcreate", "count" } },
		.period_type = { "threadcreate", "count" },
	},
};

const struct kind *kind_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}

const struct kind *kind_all(unsigned *n)
{
	*n = sizeof(kinds) / sizeof(kinds[0]);
	return kinds;
}

int kind_setup(const struct kind *k, struct profile *prof, int64_t period)
{
	int i;

	for (i = 0; i < 4 && k->sample[i][0]; i++)
		if (profile_add_sample_type(prof, k->sample[i][0], k->sample[i][1]) < 0)
			return -1;
	if (k->default_type && profile_set_default_sample_type(prof, k->default_type) < 0)
		return -1;
	return profile_set_period(prof, k->period_type[0], k->period_type[1], period);
}
