/*
 * kinds.c — the table of profile types. Names and units follow Go's
 * runtime/pprof so that pprof users meet familiar labels: a CPU profile is
 * samples/count + cpu/nanoseconds with period type cpu/nanoseconds, and
 * the thread snapshot is the native counterpart of Go's goroutine profile
 * (threads/count, period 1).
 */
#include <string.h>

#include "attach/ptrace/policies.h"
#include "attach/kinds/kinds.h"
#include "attach/source/views.h"
#include "model/profile.h"
#include "writer/text.h"

/* Go's legacy "N: N [N: N] @ pc..." form, count profiles (threads, threadcreate). */
static int text_count(const struct profile *p, const char *kind, struct buf *b)
{
	return text_write_count(p, kind, b);
}

/* The legacy heap form: raw sample counts, with the rate for pprof to scale them. */
static int text_heap(const struct profile *p, const char *kind, struct buf *b)
{
	(void)kind;
	return text_write_heap(p, profile_period(p), b);
}

/* Go's legacy contention form; block profiles are "contention" there, as Go names them. */
static int text_contention(const struct profile *p, const char *kind, struct buf *b)
{
	return text_write_contention(p, strcmp(kind, "block") ? kind : "contention", b);
}

/* Block and mutex: Go's count/cycle profiles, delays in nanoseconds. */
#define WAIT_TYPES                                                                      \
	.sample = { { "contentions", "count" }, { "delay", "nanoseconds" } },          \
	.period_type = { "contentions", "count" }

/* heap and allocs are the same data with a different default view, as in Go. */
#define HEAP_TYPES                                                                      \
	.sample = { { "alloc_objects", "count" }, { "alloc_space", "bytes" },          \
		    { "inuse_objects", "count" }, { "inuse_space", "bytes" } },        \
	.period_type = { "space", "bytes" }

static const struct kind kinds[] = {
	{
		.name = "cpu",
		.help = "where threads run on a CPU, weighted by the CPU time they used",
		.source = &source_auto, /* perf events, or the policy below with ptrace */
		.policy = &policy_cpu,
		.duration = DURATION_WINDOW,
		.flags = KIND_RUNS_ONLY,
		.labels = LABEL_THREAD | LABEL_TID,
		.formats = FORMAT_STACKS,
		.types = { .sample = { { "samples", "count" }, { "cpu", "nanoseconds" } },
			   .period_type = { "cpu", "nanoseconds" } },
	},
	{
		.name = "wall",
		.help = "where threads spend wall-clock time, running or waiting",
		.source = &source_ptrace,
		.policy = &policy_wall,
		.duration = DURATION_WINDOW,
		.labels = LABEL_THREAD | LABEL_TID | LABEL_STATE | LABEL_SYSCALL,
		.formats = FORMAT_STACKS,
		.types = { .sample = { { "samples", "count" }, { "wall", "nanoseconds" } },
			   .period_type = { "wall", "nanoseconds" } },
	},
	{
		.name = "offcpu",
		.help = "where threads wait off the CPU, each wait weighted by its length, with "
			"why (sleeping, disk wait, preempted) and who woke them (perf events; "
			"root or CAP_PERFMON, or kernel.perf_event_paranoid <= 1)",
		.source = &source_offcpu,
		.duration = DURATION_WINDOW,
		.labels = LABEL_THREAD | LABEL_TID | LABEL_STATE | LABEL_WAKER,
		.formats = FORMAT_STACKS,
		.types = { .sample = { { "switches", "count" }, { "offcpu", "nanoseconds" } },
			   .period_type = { "offcpu", "nanoseconds" } },
	},
	{
		.name = "threads",
		.help = "one snapshot of every thread's stack (like Go's goroutine profile)",
		.source = &source_ptrace,
		.policy = &policy_once,
		.duration = DURATION_NONE,
		.labels = LABEL_THREAD | LABEL_STATE | LABEL_SYSCALL,
		.formats = FORMAT_STACKS | FORMAT_TEXT | FORMAT_DUMP,
		.text = text_count,
		.types = { .sample = { { "threads", "count" } }, .period_type = { "threads", "count" } },
	},
	{
		.name = "heap",
		.help = "live heap by allocating stack (needs libcprof.so preloaded)",
		.source = &source_segment,
		.view = &view_heap,
		.duration = DURATION_DELTA,
		.formats = FORMAT_STACKS | FORMAT_TEXT,
		.text = text_heap,
		.types = { HEAP_TYPES, .default_type = "inuse_space" },
	},
	{
		.name = "allocs",
		.help = "all allocations by stack, freed or not (needs libcprof.so)",
		.source = &source_segment,
		.view = &view_heap,
		.duration = DURATION_DELTA,
		.formats = FORMAT_STACKS | FORMAT_TEXT,
		.text = text_heap,
		.types = { HEAP_TYPES, .default_type = "alloc_space" },
	},
	{
		.name = "threadcreate",
		.help = "where threads were created (needs libcprof.so)",
		.source = &source_segment,
		.view = &view_threads,
		.duration = DURATION_DELTA,
		.formats = FORMAT_STACKS | FORMAT_TEXT,
		.text = text_count,
		.types = { .sample = { { "threadcreate", "count" } },
			   .period_type = { "threadcreate", "count" } },
	},
	{
		.name = "block",
		.help = "where threads wait (locks, condition variables, semaphores, joins), "
			"weighted by how long (needs libcprof.so)",
		.source = &source_segment,
		.view = &view_block,
		.duration = DURATION_DELTA,
		.formats = FORMAT_STACKS | FORMAT_TEXT,
		.text = text_contention,
		.types = { WAIT_TYPES },
	},
	{
		.name = "mutex",
		.help = "who makes others wait: contended locks by the holder's releasing stack "
			"(needs libcprof.so)",
		.source = &source_segment,
		.view = &view_mutex,
		.duration = DURATION_DELTA,
		.formats = FORMAT_STACKS | FORMAT_TEXT,
		.text = text_contention,
		.types = { WAIT_TYPES },
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

unsigned kind_takes(const struct kind *k)
{
	unsigned t = 0;

	if ((k->source->can & SOURCE_CLOCK) && k->duration == DURATION_WINDOW)
		t |= KIND_TAKES_HZ;
	if (k->source->can & SOURCE_CHILDREN)
		t |= KIND_TAKES_CHILDREN;
	if (k->source->can & SOURCE_SAMPLER)
		t |= KIND_TAKES_SAMPLER;
	if (k->source->can & SOURCE_WAITS)
		t |= KIND_TAKES_WAITS;
	return t;
}
