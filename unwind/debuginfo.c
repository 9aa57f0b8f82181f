/*
 * debuginfo.c — the run's table of objects and their debug files. Each
 * entry is keyed by "buildid@dev:inode" (or "path@dev:inode") and holds the dwlines
 * opened for it, or NULL for "nothing found"; a lookup is a linear scan
 * of a few hundred keys at most, made once per object per capture (the
 * recorder keeps the answer per object). The debuginfod client is made
 * on the first query and kept; its progress callback ends a query at
 * its deadline.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/troot.h"
#include "common/watchdog.h"
#include "unwind/debuginfo.h"
#include "unwind/debuginfodapi.h"
#include "unwind/dwlines.h"
#include "unwind/elfimg.h"

struct entry {
	char *key;
	struct dwlines *lines; /* NULL: none found */
	enum debug_how how;
};

struct debuginfo {
	struct entry *v;
	size_t n, cap;
	debuginfod_client *client;
	int net;              /* 1 usable, 0 not tried yet, -1 off */
	uint64_t deadline_ns; /* of the query running */
	unsigned wait_s;
};

struct debuginfo *debuginfo_new(void)
{
	return calloc(1, sizeof(struct debuginfo));
}

void debuginfo_free(struct debuginfo *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++) {
		dwlines_free(d->v[i].lines);
		free(d->v[i].key);
	}
	free(d->v);
	if (d->client)
		debuginfodapi.end(d->client);
	free(d);
}

static int net_progress(debuginfod_client *c, long a, long b)
{
	struct debuginfo *d = debuginfodapi.get_user_data(c);

	(void)a;
	(void)b;
	/* Nonzero ends the query: its deadline, or a stop signal (common/watchdog.h). */
	return (d && clock_mono_ns() >= d->deadline_ns) || watchdog_stop_signal();
}

/* The client, made on first use when DEBUGINFOD_URLS names a server. */
static debuginfod_client *net_client(struct debuginfo *d)
{
	const char *urls = getenv("DEBUGINFOD_URLS"), *t = getenv("DEBUGINFOD_TIMEOUT");
	const char *why;
	char v[16];
	long s;

	if (d->net < 0)
		return NULL;
	if (d->net > 0)
		return d->client;
	d->net = -1;
	if (!urls || !*urls)
		return NULL;
	if (debuginfodapi_load(&why) < 0) {
		note("debuginfod (%s) needs libdebuginfod: %s; source lines from local debug files only",
		     urls, why);
		return NULL;
	}
	d->wait_s = DEBUGINFO_NET_WAIT_S;
	if (t && (s = strtol(t, NULL, 10)) > 0 && s < (long)d->wait_s)
		d->wait_s = (unsigned)s;
	/* libdebuginfod's own transfer timeout too, for a server that stops talking. */
	snprintf(v, sizeof(v), "%u", d->wait_s);
	setenv("DEBUGINFOD_TIMEOUT", v, 1);
	d->client = debuginfodapi.begin();
	if (!d->client)
		return NULL;
	debuginfodapi.set_user_data(d->client, d);
	debuginfodapi.set_progressfn(d->client, net_progress);
	d->net = 1;
	return d->client;
}

/* Ask the server for build_id's debug file. An fd, or -1. */
static int net_fetch(struct debuginfo *d, const char *build_id)
{
	debuginfod_client *c;
	const char *urls;
	int fd, late;

	if (!build_id || !*build_id || !(c = net_client(d)))
		return -1;
	d->deadline_ns = clock_mono_ns() + (uint64_t)d->wait_s * 1000000000ull;
	fd = debuginfodapi.find_debuginfo(c, (const unsigned char *)build_id, 0, NULL);
	if (fd >= 0)
		return fd;
	late = clock_mono_ns() >= d->deadline_ns; /* a cancelled query may say ENOENT */
	if (fd == -ENOENT && !late)
		return -1; /* the server answered: it does not have it */
	urls = getenv("DEBUGINFOD_URLS");
	note("debuginfod (%s) %s; source lines from local debug files only", urls ? urls : "?",
	     late ? "did not answer in time" : strerror(-fd));
	d->net = -1;
	return -1;
}

static int has_section(const struct elf_image *img, const char *name)
{
	const unsigned char *p;
	uint64_t vaddr;
	size_t n;
	int z;

	return img && elf_image_section(img, name, &p, &n, &vaddr, &z) == 0 && n > 0;
}

/*
 * Whether the file a server sent for build_id has that build ID: a file
 * found by build ID is believed only then, as a local one (unwind/debugfind.h).
 */
static int same_build_id(int fd, const char *build_id)
{
	struct elf_image *img = elf_image_open(fd);
	int same = img && !strcmp(elf_image_build_id(img), build_id);

	elf_image_free(img);
	if (!same && troot_first_time(build_id))
		note("debuginfod's file for build ID %.80s has another build ID: not used", build_id);
	return same;
}

/* Search the way the header says. */
static struct dwlines *lookup(struct debuginfo *d, const struct debuginfo_req *q,
			      enum debug_how *how)
{
	struct dwlines *l = NULL;
	int fd;

	if (has_section(q->img, ".debug_info") && q->open_self &&
	    (l = dwlines_open(q->open_self(q->ctx), q->pid))) {
		*how = DEBUG_SELF;
		return l;
	}
	fd = debugfind_open(q->pid, q->path, q->build_id, q->img, how);
	if (fd >= 0 && (l = dwlines_open(fd, q->pid)))
		return l;
	if ((fd = net_fetch(d, q->build_id)) >= 0 && !same_build_id(fd, q->build_id)) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && (l = dwlines_open(fd, 0))) {
		*how = DEBUG_DEBUGINFOD;
		return l;
	}
	*how = DEBUG_NONE;
	return NULL;
}

struct dwlines *debuginfo_lines(struct debuginfo *d, const struct debuginfo_req *q,
				enum debug_how *how)
{
	struct entry *e;
	char key[4400];
	size_t i;

	*how = DEBUG_NONE;
	if (!d || !q)
		return NULL;
	/* The file's identity too: another process's object may claim the same build ID. */
	if (q->build_id && *q->build_id)
		snprintf(key, sizeof(key), "%s@%llx:%llu", q->build_id, (unsigned long long)q->dev,
			 (unsigned long long)q->inode);
	else
		snprintf(key, sizeof(key), "%s@%llx:%llu", q->path ? q->path : "",
			 (unsigned long long)q->dev, (unsigned long long)q->inode);
	for (i = 0; i < d->n; i++) {
		if (!strcmp(d->v[i].key, key)) {
			*how = d->v[i].how;
			return d->v[i].lines;
		}
	}
	e = array_grow(d->v, &d->cap, d->n + 1, sizeof(*e), DEBUGINFO_MAX_OBJECTS);
	if (!e)
		return NULL;
	d->v = e;
	e = &d->v[d->n];
	e->key = strdup(key);
	if (!e->key)
		return NULL;
	e->lines = lookup(d, q, &e->how);
	d->n++;
	*how = e->how;
	return e->lines;
}
