#ifndef CPROF_MAPS_H
#define CPROF_MAPS_H
/*
 * maps — the memory map of a process, parsed from /proc/PID/maps.
 *
 * Invariants:
 *  - the text is untrusted: a malformed line is skipped (and counted), a
 *    line is never read past its end, a path is at most MAPS_MAX_PATH bytes
 *    and at most MAPS_MAX_ENTRIES entries are kept;
 *  - entries are sorted by start and do not overlap (a line that would
 *    break this is skipped);
 *  - path is "" for anonymous memory, "[stack]", "[vdso]", "[heap]" and the
 *    like for the kernel's pseudo-paths, else the file's path with a
 *    trailing " (deleted)" removed and deleted set.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MAPS_MAX_ENTRIES (1u << 20)
#define MAPS_MAX_PATH 4096
#define MAPS_MAX_TEXT (256u << 20)

#define MAP_R 1u
#define MAP_W 2u
#define MAP_X 4u
#define MAP_P 8u /* private (copy-on-write); shared when clear */

struct map_entry {
	uint64_t start, end;   /* [start, end) */
	uint64_t offset;       /* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	unsigned perms;        /* MAP_* bits */
	int deleted;           /* the file was deleted or replaced */
	char *path;            /* never NULL */
};

struct maps {
	struct map_entry *v;
	size_t n;
	size_t skipped;        /* malformed lines ignored by the last parse */
};

/* Empty map set. */
void maps_init(struct maps *m);

/* Free the entries; m is empty afterwards. */
void maps_release(struct maps *m);

/* Replace m's entries with those parsed from text[0..len). 0, or -1 when out of memory. */
int maps_parse(struct maps *m, const char *text, size_t len);

/* Read and parse /proc/PID/maps. 0 or -1 with errno set. */
int maps_read(struct maps *m, pid_t pid);

/* The entry containing addr, or NULL. */
const struct map_entry *maps_find(const struct maps *m, uint64_t addr);

#endif
