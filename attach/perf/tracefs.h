#ifndef CPROF_PERF_TRACEFS_H
#define CPROF_PERF_TRACEFS_H
/*
 * tracefs — the kernel's tracepoints as perf events: a tracepoint's id
 * (the perf_event_attr config of PERF_TYPE_TRACEPOINT) and where one of
 * its fields sits in a sample's raw data, read from the host's tracefs
 * (/sys/kernel/tracing, else /sys/kernel/debug/tracing). These are the
 * kernel's own files, never a path the target names; tracefs is not
 * mounted here (a profiler does not change the host's mounts), so where
 * it is absent the caller goes without tracepoints and says so.
 *
 * Invariants:
 *  - reads are bounded (proc_read()); a format we cannot parse gives -1,
 *    never a guessed offset;
 *  - nothing here allocates or prints.
 */
#include <stddef.h>
#include <stdint.h>

/* A field of a tracepoint's record: its offset and size in the raw data. */
struct tracefs_field {
	uint32_t offset, size;
};

/*
 * The id of tracepoint sys:name (e.g. "sched", "sched_switch"): > 0, or 0
 * with errno (ENOENT: no tracefs mounted, or no such event; EACCES: not
 * readable by this user).
 */
uint64_t tracefs_event_id(const char *sys, const char *name);

/*
 * Where field sits in the records of sys:name, from its format file.
 * 0, or -1 (no tracefs, no such field, or a format we cannot read).
 */
int tracefs_field(const char *sys, const char *name, const char *field,
		  struct tracefs_field *f);

/*
 * Parse a format file's text for field: 0 or -1. The unit tests and
 * tracefs_field() share it.
 */
int tracefs_parse_field(const char *format, const char *field, struct tracefs_field *f);

#endif
