/*
 * push.c — the uploader beside the series. Every profile goes through the
 * spool, even when the server is up: two small atomic file writes a
 * capture (renamed into place, never synced: writer/outfile.c), and in
 * exchange one ordered queue for this run's profiles and those earlier
 * runs left, which survives a SIGKILL of cprof-attach (at worst a
 * profile the server took just before the kill is sent again by the next
 * run: delivery is at least once). The uploader
 * thread never touches the target; it blocks only in libcurl, whose every
 * request ends within the timeout.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach/capture/target.h"
#include "attach/push/label.h"
#include "attach/push/push.h"
#include "attach/push/request.h"
#include "attach/push/spool.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/privdir.h"
#include "common/proc.h"

#define PENDING_MAX 4096u /* captures whose outcome is awaited: 2.8 days at 1/min; a --summary json line each, usually ~1 KiB (series.c caps it at 64 KiB) */
#define BACKOFF_MIN_NS (100ull * 1000000ull)
#define BACKOFF_MAX_NS (30ull * 1000000000ull)
#define MSG_MAX 240u

/* One capture of this run not yet pushed or dropped. */
struct pending {
	char stem[SPOOL_STEM_MAX];
	struct buf json; /* its --summary json line, not yet printed */
};

struct push {
	struct spool *sp;
	struct request *rq;
	char name[SPOOL_NAME_MAX]; /* APP{labels} */
	char kind[SPOOL_KIND_MAX];
	char run[48];              /* "PID.SECONDS": this run's part of the stems */
	int pid, json_fd;
	uint64_t timeout_ns;
	pthread_t thread;
	int started;
	pthread_mutex_t mu;        /* guards everything below */
	pthread_cond_t cv;
	unsigned gen;              /* bumped by push_add */
	int stopping, refused;
	struct pending *pend;
	size_t npend, cappend;
	unsigned added, pushed, dropped, older_pushed, older_dropped, older_rejected;
	int told_retry, told_reject, told_bad;
	uint64_t rng;
};

void push_options_env(struct push_options *po)
{
	const char *e;

	if (!po->spool_max)
		po->spool_max = PUSH_SPOOL_DEFAULT_MAX;
	if (!po->timeout_ns)
		po->timeout_ns = PUSH_TIMEOUT_DEFAULT_NS;
	if (!po->tenant && (e = getenv("CPROF_PUSH_TENANT")) && *e)
		po->tenant = e;
	if (!po->basic_auth && (e = getenv("CPROF_PUSH_BASIC_AUTH")) && *e)
		po->basic_auth = e;
	if (!po->token && (e = getenv("CPROF_PUSH_BEARER_TOKEN")) && *e)
		po->token = e;
}

/* Print the capture's JSON line with its outcome, and forget the line. */
static void pending_print(struct push *p, struct pending *e, const char *outcome, const char *reason)
{
	int r;

	if (!e->json.len || p->json_fd < 0)
		return;
	r = buf_printf(&e->json, ",\"push\":\"%s\"", outcome);
	if (r == 0 && reason)
		r = buf_printf(&e->json, ",\"push_reason\":\"%s\"", reason);
	if (r == 0)
		r = buf_printf(&e->json, "}\n");
	if (r == 0 && write(p->json_fd, e->json.data, e->json.len) < 0) {
		/* the reader went away; nothing to do */
	}
	buf_release(&e->json);
}

static long pending_find(const struct push *p, const char *stem)
{
	size_t i;

	for (i = 0; i < p->npend; i++)
		if (!strcmp(p->pend[i].stem, stem))
			return (long)i;
	return -1;
}

/* The capture stem is done: pushed or dropped. Locked. */
static void pending_end(struct push *p, size_t i, const char *outcome, const char *reason)
{
	pending_print(p, &p->pend[i], outcome, reason);
	buf_release(&p->pend[i].json);
	memmove(&p->pend[i], &p->pend[i + 1], (p->npend - i - 1) * sizeof(p->pend[0]));
	p->npend--;
}

/* spool_add() dropped stem to keep under the cap. */
static void push_dropped(void *ctx, const char *stem)
{
	struct push *p = ctx;
	long i;

	pthread_mutex_lock(&p->mu);
	i = pending_find(p, stem);
	if (i >= 0) {
		pending_end(p, (size_t)i, "dropped", "spool full");
		p->dropped++;
	} else {
		p->older_dropped++;
	}
	pthread_mutex_unlock(&p->mu);
}

/* The server took stem, or refused it for good (outcome "dropped"). */
static void push_settled(struct push *p, const char *stem, int ok)
{
	long i;

	pthread_mutex_lock(&p->mu);
	i = pending_find(p, stem);
	if (i >= 0) {
		pending_end(p, (size_t)i, ok ? "pushed" : "dropped", ok ? NULL : "rejected");
		if (ok)
			p->pushed++;
		else
			p->dropped++;
	} else if (ok) {
		p->older_pushed++;
	} else {
		p->older_rejected++;
	}
	pthread_mutex_unlock(&p->mu);
}

/* The run part of a stem ("START-RUN-N"), into out[cap]; -1 when it has none. */
static int stem_run(const char *stem, char *out, size_t cap)
{
	const char *a = strchr(stem, '-'), *b = strrchr(stem, '-');

	if (!a || b <= a + 1 || (size_t)(b - a - 1) >= cap)
		return -1;
	memcpy(out, a + 1, (size_t)(b - a - 1));
	out[b - a - 1] = 0;
	return 0;
}

/*
 * Send the spool's entries oldest first: this run's, and those of runs
 * that are over (another live run sends its own). With a deadline
 * (CLOCK_MONOTONIC ns, 0: none), stop when it is past. 0: all sent;
 * 1: a failure to retry, or the deadline; 2: refused.
 */
static int push_pass(struct push *p, uint64_t deadline)
{
	char run[SPOOL_STEM_MAX];
	char (*stems)[SPOOL_STEM_MAX] = NULL, msg[MSG_MAX];
	struct spool_item it;
	enum send_result res;
	long n, i, status;
	int r, ret = 0;

	n = spool_list(p->sp, &stems);
	if (n < 0) {
		if (!p->told_bad++)
			error_errno("cannot list the spool directory \"%s\"", spool_dir(p->sp));
		return 1;
	}
	for (i = 0; i < n && ret == 0; i++) {
		if (stem_run(stems[i], run, sizeof(run)) == 0 && strcmp(run, p->run) != 0 &&
		    spool_run_alive(p->sp, run))
			continue;
		if (deadline && clock_mono_ns() > deadline) {
			ret = 1;
			break;
		}
		r = spool_take(p->sp, stems[i], &it);
		if (r == 1)
			continue;
		if (r == 2) {
			if (!p->told_bad++)
				warning("spool entry \"%s/%s\" is unreadable (bad metadata or too "
					"big): skipped",
					spool_dir(p->sp), stems[i]);
			continue;
		}
		res = request_send(p->rq, &it.meta, it.data.data, it.data.len, &status, msg, sizeof(msg));
		switch (res) {
		case SEND_OK:
			spool_done(p->sp, &it, 1);
			push_settled(p, stems[i], 1);
			break;
		case SEND_REJECTED:
			if (!p->told_reject++)
				error("%s rejected the profile of capture %u of %d (HTTP %ld): %s; it is "
				      "dropped (further rejections are counted at the end)",
				      request_where(p->rq), it.meta.capture, it.meta.pid, status, msg);
			spool_done(p->sp, &it, 1);
			push_settled(p, stems[i], 0);
			break;
		case SEND_REFUSED:
			error("%s refused the push (HTTP %ld): %s; profiles are kept in \"%s\" "
			      "for a later run",
			      request_where(p->rq), status, msg, spool_dir(p->sp));
			spool_done(p->sp, &it, 0);
			ret = 2;
			break;
		case SEND_RETRY:
			if (!p->told_retry++) {
				if (status)
					warning("cannot push to %s (HTTP %ld): %s; profiles wait in "
						"\"%s\" and are retried",
						request_where(p->rq), status, msg, spool_dir(p->sp));
				else
					warning("cannot push to %s: %s; profiles wait in \"%s\" and are "
						"retried",
						request_where(p->rq), msg, spool_dir(p->sp));
			}
			spool_done(p->sp, &it, 0);
			ret = 1;
			break;
		}
	}
	free(stems);
	return ret;
}

/* The next backoff: doubled, capped, then jittered by -25%..+25% (a fleet must not retry in step). */
static uint64_t push_backoff(struct push *p, uint64_t *base)
{
	uint64_t x;

	*base = *base ? *base * 2 : BACKOFF_MIN_NS;
	if (*base > BACKOFF_MAX_NS)
		*base = BACKOFF_MAX_NS;
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	x = p->rng % (*base / 2 + 1);
	return *base - *base / 4 + x;
}

/* Wait on the condition until deadline (CLOCK_MONOTONIC ns). Locked. */
static void push_wait_until(struct push *p, uint64_t deadline)
{
	struct timespec ts = { (time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull) };

	pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

static void *push_main(void *arg)
{
	struct push *p = arg;
	uint64_t base = 0, deadline;
	unsigned gen;
	int final, r;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		final = p->stopping;
		gen = p->gen;
		r = 2;
		if (!p->refused) {
			pthread_mutex_unlock(&p->mu);
			/* The last pass is bounded: a slow server does not hold the end of the series. */
			r = push_pass(p, final ? clock_mono_ns() + p->timeout_ns : 0);
			pthread_mutex_lock(&p->mu);
		}
		if (r == 2)
			p->refused = 1;
		if (final)
			break;
		if (p->stopping)
			continue; /* the series ended during the pass: one more, the last */
		if (r == 1) {
			/* New captures do not cut the backoff short: a failing server is left alone. */
			deadline = clock_mono_ns() + push_backoff(p, &base);
			while (!p->stopping && clock_mono_ns() < deadline)
				push_wait_until(p, deadline);
		} else if (r == 0) {
			base = 0;
			while (!p->stopping && gen == p->gen)
				pthread_cond_wait(&p->cv, &p->mu);
		} else {
			while (!p->stopping)
				pthread_cond_wait(&p->cv, &p->mu);
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void push_free(struct push *p)
{
	size_t i;

	for (i = 0; i < p->npend; i++)
		buf_release(&p->pend[i].json);
	free(p->pend);
	request_release(p->rq);
	if (p->sp)
		spool_release(p->sp);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

int push_start(struct push **pp, const struct push_options *po, const struct target *t,
	       const char *kind, int json_fd)
{
	struct request_conf rc = { po->url, po->basic_auth, po->token, po->tenant, po->timeout_ns };
	char dir[PATH_MAX];
	pthread_condattr_t ca;
	struct push *p;
	sigset_t all, old;
	int r;

	*pp = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return error("out of memory");
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	p->json_fd = json_fd;
	p->pid = (int)t->pid;
	p->timeout_ns = po->timeout_ns;
	p->rng = clock_mono_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
	snprintf(p->kind, sizeof(p->kind), "%s", kind);
	snprintf(p->run, sizeof(p->run), "%d.%llu", (int)getpid(),
		 (unsigned long long)(clock_real_ns() / 1000000000ull));
	/*
	 * The default is the user's own cache directory, never a fixed name in
	 * a shared directory like /tmp, which another user could make first.
	 */
	if (!po->spool && !privdir_cache("spool", dir, sizeof(dir))) {
		error("no spool directory: neither XDG_CACHE_HOME nor HOME is an absolute path; "
		      "give one with --spool DIR");
		goto err;
	}
	if (push_name_build(po, t, p->name, sizeof(p->name)) < 0 || request_global_init() < 0 ||
	    request_init(&p->rq, &rc) < 0 || spool_open(&p->sp, po->spool ? po->spool : dir,
							 po->spool_max) < 0 ||
	    spool_lock_run(p->sp, p->run) < 0)
		goto err;
	/* The uploader takes no signal: they are the series' (read from a signalfd). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&p->thread, NULL, push_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		errno = r;
		error_errno("cannot start the push thread");
		goto err;
	}
	p->started = 1;
	*pp = p;
	return 0;
err:
	push_free(p);
	return -1;
}

int push_add(struct push *p, unsigned n, uint64_t from_ns, uint64_t until_ns, const void *data,
	     size_t len, struct buf *json)
{
	char stem[SPOOL_STEM_MAX];
	struct spool_meta m;
	struct pending *e, *np;
	size_t cap;
	long i;
	int r;

	memset(&m, 0, sizeof(m));
	memcpy(m.name, p->name, sizeof(m.name));
	memcpy(m.kind, p->kind, sizeof(m.kind));
	m.from_ns = from_ns;
	m.until_ns = until_ns < from_ns ? from_ns : until_ns;
	m.capture = n;
	m.pid = p->pid;
	pthread_mutex_lock(&p->mu);
	if (p->npend == PENDING_MAX) {
		/* A long outage: the oldest capture's line says spooled, and it is no longer followed. */
		pending_end(p, 0, "spooled", NULL);
	}
	if (p->npend == p->cappend) {
		cap = p->cappend ? p->cappend * 2 : 16;
		np = realloc(p->pend, cap * sizeof(*np));
		if (!np) {
			pthread_mutex_unlock(&p->mu);
			return error("out of memory");
		}
		p->pend = np;
		p->cappend = cap;
	}
	/* The uploader may move entries once the lock is dropped: the stem is kept apart. */
	snprintf(stem, sizeof(stem), "%020llu-%s-%u", (unsigned long long)from_ns, p->run, n);
	e = &p->pend[p->npend++];
	memcpy(e->stem, stem, sizeof(stem));
	buf_init(&e->json, 1 << 16);
	if (json) {
		e->json = *json;
		buf_init(json, json->limit);
	}
	p->added++;
	pthread_mutex_unlock(&p->mu);
	r = spool_add(p->sp, stem, &m, data, len, push_dropped, p);
	pthread_mutex_lock(&p->mu);
	if (r < 0 && (i = pending_find(p, stem)) >= 0) {
		pending_end(p, (size_t)i, "dropped", "not written");
		p->dropped++;
	}
	p->gen++;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return r < 0 ? -1 : 0;
}

unsigned push_finish(struct push *p, int quiet)
{
	unsigned unsent;
	size_t i;

	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->started)
		pthread_join(p->thread, NULL);
	/* Gone from the spool without being sent: another process's cap dropped it. */
	for (i = 0; i < p->npend; i++) {
		if (spool_has(p->sp, p->pend[i].stem)) {
			pending_print(p, &p->pend[i], "spooled", NULL);
			continue;
		}
		pending_end(p, i--, "dropped", "spool full");
		p->dropped++;
	}
	unsent = p->added - p->pushed;
	if (p->told_reject > 1)
		error("%s rejected %d profiles in all", request_where(p->rq), p->told_reject);
	if (unsent)
		warning("%u of %u profiles not pushed to %s: %u kept in \"%s\" for a later run, %u "
			"dropped",
			unsent, p->added, request_where(p->rq), (unsigned)p->npend, spool_dir(p->sp),
			p->dropped);
	if (p->older_dropped)
		warning("the spool \"%s\" was full: dropped %u profiles of earlier runs, the oldest "
			"first",
			spool_dir(p->sp), p->older_dropped);
	if (p->older_rejected)
		warning("%s rejected %u profiles of earlier runs: dropped from \"%s\"",
			request_where(p->rq), p->older_rejected, spool_dir(p->sp));
	if (p->older_pushed && !quiet)
		note("pushed %u profiles an earlier run had kept in \"%s\"", p->older_pushed,
		     spool_dir(p->sp));
	push_free(p);
	return unsent;
}
