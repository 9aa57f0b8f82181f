/*
 * tnames.c — thread names by tid (tnames.h): a map to a growing array of
 * 16-byte names, filled from /proc/PID/task/TID/comm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/source/tnames.h"
#include "common/proc.h"

void tnames_init(struct tnames *t, pid_t pid, const char *comm)
{
	memset(t, 0, sizeof(*t));
	u64map_init(&t->map, TNAMES_MAX);
	t->pid = pid;
	t->comm = comm;
}

void tnames_release(struct tnames *t)
{
	free(t->name);
	u64map_release(&t->map);
	t->name = NULL;
	t->n = t->cap = 0;
}

const char *tnames_get(struct tnames *t, uint32_t tid)
{
	char path[64], buf[32], *nl;
	uint64_t i;

	if (u64map_get(&t->map, tid, &i))
		return t->name[i - 1];
	if (t->n == t->cap) {
		size_t n = t->cap ? t->cap * 2 : 64;
		char(*v)[16] = n <= TNAMES_MAX ? realloc(t->name, n * sizeof(*v)) : NULL;

		if (!v)
			return t->comm;
		t->name = v;
		t->cap = n;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)t->pid, tid);
	/* A thread that already ended had its creator's name: most often the process's. */
	if (proc_read(path, buf, sizeof(buf)) <= 0)
		snprintf(buf, sizeof(buf), "%s", t->comm);
	if ((nl = strchr(buf, '\n')))
		*nl = 0;
	buf[sizeof(t->name[0]) - 1] = 0;
	memcpy(t->name[t->n], buf, sizeof(t->name[0]));
	if (u64map_put(&t->map, tid, t->n + 1) < 0)
		return t->comm;
	return t->name[t->n++];
}

void tnames_rename(struct tnames *t, uint32_t tid, const char name[16])
{
	uint64_t i;

	if (u64map_get(&t->map, tid, &i)) {
		memcpy(t->name[i - 1], name, sizeof(t->name[0]));
		t->name[i - 1][sizeof(t->name[0]) - 1] = 0;
	}
}
