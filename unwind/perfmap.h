#ifndef CPROF_PERFMAP_H
#define CPROF_PERFMAP_H
/*
 * perfmap — names of code generated at run time, from the perf map a JIT
 * writes for exactly this: /tmp/perf-PID.map, one "START SIZE NAME" line
 * per function (hex START and SIZE, with or without 0x), the convention of
 * node --perf-basic-prof, LuaJIT, Java agents, .NET and Wasmtime. It is
 * read as /tmp/perf-NSPID.map inside the target's root (NSPID the pid
 * inside the target's namespace), since a container's /tmp is its own,
 * with the target's credentials (common/troot.h): a link there reaches no
 * file outside its root or that it could not read itself.
 *
 * Invariants:
 *  - the file is untrusted: at most PERFMAP_MAX_BYTES are read (the last
 *    ones: a JIT appends), a line is at most PERFMAP_MAX_LINE bytes, a
 *    malformed line (bad number, zero size, a range that wraps, no name)
 *    is skipped and counted, names are cut at PERFMAP_MAX_NAME bytes and
 *    lose control characters, and at most PERFMAP_MAX_ENTRIES entries are
 *    kept;
 *  - a later line for an overlapping range wins (a JIT reuses freed code
 *    memory and appends the new function): the entries are sorted by start
 *    and disjoint, every byte named by the last line that covers it (an
 *    earlier range keeps the parts no later one covers);
 *  - names live in the table's own block and stay valid until release;
 *  - reading it costs at most about 1/(1+PERFMAP_BACKOFF) of the time:
 *    after a read that took T the next waits PERFMAP_BACKOFF x T, and an
 *    unchanged file is not parsed again.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * One read parses at most this much (about a second of one core): the
 * newest functions of a large map, one entry per JIT-compiled function.
 */
#define PERFMAP_MAX_BYTES (32u << 20)
#define PERFMAP_MAX_LINE 8192
#define PERFMAP_MAX_NAME 1024
#define PERFMAP_MAX_ENTRIES (1u << 20)
/* After a read that took T, the next one waits PERFMAP_BACKOFF x T: at most 1/(1+B) of the time. */
#define PERFMAP_BACKOFF 9

struct perfmap_entry {
	uint64_t start, end; /* [start, end) */
	size_t name;         /* offset of the NUL-terminated name in names */
};

struct perfmap {
	struct perfmap_entry *v;
	size_t n;
	char *names;
	size_t names_len;
	size_t skipped; /* malformed lines of the last parse */
	int capped;     /* a cap cut the last parse (or read) short */
	/* perfmap_read()'s: the file last parsed, and when it may be read again. */
	int read_once;
	uint64_t ino, size;
	int64_t mtime_ns;
	uint64_t next_ns;
};

/* An empty table. */
void perfmap_init(struct perfmap *m);

/* Free what it holds; empty again. */
void perfmap_release(struct perfmap *m);

/* Replace m's entries with those of text[0..len). 0, or -1 when out of memory (m empty). */
int perfmap_parse(struct perfmap *m, const char *text, size_t len);

/*
 * Read process pid's perf map. 0, or -1 with errno (ENOENT: the process
 * writes none). m keeps its old entries on failure, and when the file is
 * unchanged since it was parsed (inode, size, mtime), or when the last
 * read's cost is not yet paid back (PERFMAP_BACKOFF). Of a file over
 * PERFMAP_MAX_BYTES or PERFMAP_MAX_ENTRIES lines its last part is parsed
 * (a cut first line skipped), and a cap hit gives one note per run.
 */
int perfmap_read(struct perfmap *m, pid_t pid);

/* The name of the function holding addr, *start its start; NULL when none. */
const char *perfmap_find(const struct perfmap *m, uint64_t addr, uint64_t *start);

#endif
