/*
 * settle.c — per-thread weights, live threads' clocks, and the scaling of
 * a profile's samples by their tid label (settle.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/source/settle.h"
#include "common/proc.h"
#include "model/profile.h"

void settle_init(struct settle *st)
{
	u64map_init(&st->weight, SETTLE_MAX);
	u64map_init(&st->live, SETTLE_MAX);
	u64map_init(&st->factor, SETTLE_MAX);
	u64map_init(&st->slices, SETTLE_MAX);
	st->ended = 1.0;
}

void settle_release(struct settle *st)
{
	u64map_release(&st->weight);
	u64map_release(&st->live);
	u64map_release(&st->factor);
	u64map_release(&st->slices);
}

void settle_add(struct settle *st, uint32_t tid, uint64_t ns)
{
	uint64_t w = 0;

	u64map_get(&st->weight, tid, &w);
	u64map_put(&st->weight, tid, w + ns); /* full: that thread is not scaled */
}

uint64_t settle_weight(const struct settle *st, uint32_t tid)
{
	uint64_t w = 0;

	u64map_get(&st->weight, tid, &w);
	return w;
}

/* A schedstat line's clock into m and slices (unless NULL). */
static void put_schedstat(const char *buf, uint64_t tid, struct u64map *m, struct u64map *slices)
{
	uint64_t cpu, n;

	if (proc_schedstat(buf, &cpu, NULL, &n) < 0)
		return;
	u64map_put(m, tid, cpu);
	if (slices)
		u64map_put(slices, tid, n);
}

/*
 * Paths are opened relative to the task directory: on 3000 threads the
 * lookups of /proc/PID/task/... were most of a capture's fixed cost.
 */
void settle_read_clocks(pid_t pid, struct u64map *m, struct u64map *slices)
{
	char path[64], buf[96];
	struct dirent *d;
	int fd;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		long tid = atol(d->d_name);

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "%ld/schedstat", tid);
		/* A thread that ended between the two reads is simply not live. */
		fd = openat(dirfd(dir), path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (proc_pread(fd, buf, sizeof(buf)) > 0)
			put_schedstat(buf, (uint64_t)tid, m, slices);
		close(fd);
	}
	closedir(dir);
}

void settle_read_live(struct settle *st, pid_t pid)
{
	settle_read_clocks(pid, &st->live, &st->slices);
}

uint64_t settle_read_sampled(struct settle *st, pid_t pid, const struct u64map *cpu0)
{
	char path[64], buf[96];
	uint64_t tid, c0, now, sum = 0;
	size_t i;
	int dfd, fd;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 0;
	for (i = 0; i < st->weight.nslots; i++) {
		if (!st->weight.slots[i].used)
			continue;
		tid = st->weight.slots[i].key;
		snprintf(path, sizeof(path), "%llu/schedstat", (unsigned long long)tid);
		if ((fd = openat(dfd, path, O_RDONLY | O_CLOEXEC)) < 0)
			continue; /* ended */
		if (proc_pread(fd, buf, sizeof(buf)) > 0) {
			put_schedstat(buf, tid, &st->live, &st->slices);
			now = 0;
			u64map_get(&st->live, tid, &now);
			c0 = 0;
			u64map_get(cpu0, tid, &c0);
			sum += now > c0 ? now - c0 : 0;
		}
		close(fd);
	}
	close(dfd);
	return sum;
}

uint64_t settle_ended_weight(const struct settle *st)
{
	uint64_t sum = 0, v;
	size_t i;

	for (i = 0; i < st->weight.nslots; i++)
		if (st->weight.slots[i].used && !u64map_get(&st->live, st->weight.slots[i].key, &v))
			sum += st->weight.slots[i].value;
	return sum;
}

void settle_set(struct settle *st, uint32_t tid, double f)
{
	uint64_t bits;

	if (!(f >= 0))
		f = 0;
	memcpy(&bits, &f, sizeof(bits));
	u64map_put(&st->factor, tid, bits);
}

struct settle_ctx {
	struct settle *st;
	const struct profile *prof;
	int64_t tid_key;        /* the string index of "tid", or -1 */
};

static double settle_factor(void *ctx, const struct profile_sample *s)
{
	struct settle_ctx *c = ctx;
	uint64_t bits, v, tid;
	double f;
	size_t i;

	for (i = 0; i < s->nlabels; i++) {
		if (s->labels[i].key != c->tid_key)
			continue;
		tid = (uint64_t)s->labels[i].num;
		if (u64map_get(&c->st->factor, tid, &bits)) {
			memcpy(&f, &bits, sizeof(f));
			return f;
		}
		return u64map_get(&c->st->live, tid, &v) ? 1.0 : c->st->ended;
	}
	return 1.0;
}

void settle_apply(struct settle *st, struct profile *prof, unsigned vi)
{
	struct settle_ctx c = { st, prof, -1 };

	/* Interning finds the index; a profile without the label gains an unused string. */
	c.tid_key = profile_intern_string(prof, "tid");
	if (c.tid_key <= 0)
		return;
	profile_scale_values(prof, vi, settle_factor, &c);
}
