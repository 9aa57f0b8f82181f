#ifndef CPROF_PUSH_H
#define CPROF_PUSH_H
/*
 * push — sending every capture of a series to a Pyroscope server beside
 * the series, losing none: each profile is first kept in the spool
 * (spool.h), then an uploader thread sends the spool's entries oldest
 * first (request.h) and removes each one the server took. What could not
 * be sent stays for later in this run or the next run of cprof-attach
 * with the same spool.
 *
 * Invariants:
 *  - push_add() never waits for the network: it writes the spool entry
 *    (one small file write) and wakes the uploader. The queue is the
 *    spool, bounded by its cap; a request is bounded by its timeout;
 *  - the uploader sends in order and stops at the first failure: a
 *    network error, a timeout, 408, 429 or 5xx is retried with backoff
 *    (100 ms doubling to 30 s, jittered); a 401/403/407 or a redirect
 *    (configuration) stops pushing for this run with every entry kept;
 *    any other 4xx drops that one profile. Each kind of failure is
 *    reported once, with the server's message;
 *  - each capture of this run ends in exactly one of pushed, spooled (still
 *    in the spool when the run ends, to be sent by a later one) or dropped
 *    (the spool's cap, or the server refused it); its --summary json line
 *    is printed once that is final, with "push" saying which: at once
 *    while the server takes every profile, after an outage when it ends,
 *    at the end of the run for what is still spooled (and, past 4096
 *    captures waiting, for the oldest);
 *  - while this run lives, only it sends its entries (spool.h's run lock),
 *    so their outcomes are its to report; it also sends what runs that
 *    ended left;
 *  - credentials never appear in a message or in the JSON.
 */
#include <stddef.h>
#include <stdint.h>

#define PUSH_LABELS_MAX 32u
#define PUSH_SPOOL_DEFAULT_MAX (100ull << 20)
#define PUSH_TIMEOUT_DEFAULT_NS (10ull * 1000000000ull)

struct buf;
struct push;
struct target;

/* The push options of the command line. */
struct push_options {
	const char *url;        /* --push; NULL: no pushing */
	const char *app;        /* --app; NULL: the target's executable name */
	const char *labels[PUSH_LABELS_MAX]; /* --label K=V, checked by push_label_check() */
	unsigned nlabels;
	const char *spool;      /* --spool; NULL: $XDG_CACHE_HOME/cprof/spool or ~/.cache/cprof/spool */
	uint64_t spool_max;     /* --spool-max, bytes */
	uint64_t timeout_ns;    /* --push-timeout, per request */
	const char *tenant;     /* --tenant or CPROF_PUSH_TENANT */
	const char *basic_auth; /* --basic-auth or CPROF_PUSH_BASIC_AUTH, "user:password" */
	const char *token;      /* --bearer-token or CPROF_PUSH_BEARER_TOKEN */
};

/* Fill the options' defaults and the credentials from the environment. */
void push_options_env(struct push_options *po);

/*
 * Start pushing the captures of kind (a kind's name) of target t: open the
 * spool, check the URL, start the uploader (which at once sends what an
 * earlier run left). json_fd is where --summary json lines go (-1: none).
 * 0, or -1 with a message (a bad URL, an unusable spool directory).
 */
int push_start(struct push **pp, const struct push_options *po, const struct target *t,
	       const char *kind, int json_fd);

/*
 * Queue capture number n (from_ns..until_ns, len bytes of gzipped pprof).
 * json, when not NULL, holds the capture's --summary json line without
 * its closing "}\n"; push takes its contents and prints the line when the
 * outcome is known. Returns 0, or -1 when the profile could not be kept
 * (the line is printed as dropped).
 */
int push_add(struct push *p, unsigned n, uint64_t from_ns, uint64_t until_ns, const void *data,
	     size_t len, struct buf *json);

/*
 * End: one more pass over the spool (at most the timeout long, stopping
 * at the first failure), stop the uploader, print the lines
 * still waiting and a note of what was not sent. Returns how many of this
 * run's captures were not pushed (spooled or dropped). Frees p.
 */
unsigned push_finish(struct push *p, int quiet);

#endif
