#ifndef CPROF_SOURCE_TNAMES_H
#define CPROF_SOURCE_TNAMES_H
/*
 * tnames — the names of a process's threads, by tid, as the sources that
 * read the kernel's records meet them: read from /proc at a thread's first
 * sight, renamed by the records that say so (PERF_REC_COMM).
 *
 * Invariants:
 *  - at most TNAMES_MAX threads are kept; later ones, and a thread that
 *    ended before its name was read (it had its creator's name, most often
 *    the process's), get the process's name;
 *  - a name is at most 15 bytes and NUL-terminated; the strings returned
 *    live until tnames_release().
 */
#include <stdint.h>
#include <sys/types.h>

#include "common/u64map.h"

#define TNAMES_MAX 65536

struct tnames {
	struct u64map map;     /* tid -> 1 + index in name[] */
	char (*name)[16];
	size_t n, cap;
	pid_t pid;
	const char *comm;      /* the process's name: the caller's, it must outlive this */
};

void tnames_init(struct tnames *t, pid_t pid, const char *comm);
void tnames_release(struct tnames *t);

/* tid's name: kept from earlier, else read now, else the process's. */
const char *tnames_get(struct tnames *t, uint32_t tid);

/* tid was renamed to name (a record said so): kept if tid is known. */
void tnames_rename(struct tnames *t, uint32_t tid, const char name[16]);

/* Threads named so far. */
static inline uint64_t tnames_count(const struct tnames *t)
{
	return t->map.count;
}

#endif
