#ifndef CPROF_REQUEST_H
#define CPROF_REQUEST_H
/*
 * request — one Pyroscope ingest request over libcurl: POST
 * URL/ingest?name=APP{labels}&from=S&until=S&spyName=cprof with a
 * multipart/form-data body holding the gzipped pprof in the field
 * "profile" (and, for block and mutex, "sample_type_config"). The
 * contract and where it was read are at the top of request.c.
 *
 * Invariants:
 *  - credentials (user and password in the URL, --basic-auth, the bearer
 *    token) go into headers only: request_where() and every message name
 *    the server by scheme, host, port and path alone;
 *  - only http and https are spoken, redirects are not followed, and
 *    every request ends within the timeout given;
 *  - one struct request is used by one thread at a time (libcurl easy
 *    handles are not shared); libcurl's global state is set up by
 *    request_global_init() on the main thread before any other starts.
 */
#include <stddef.h>
#include <stdint.h>

#include "attach/push/parse.h"

struct request;

/* Where and how to push; strings are borrowed for the request's life. */
struct request_conf {
	const char *url;        /* http(s)://[user:password@]host[:port][/prefix] */
	const char *basic_auth; /* "user:password", or NULL */
	const char *token;      /* bearer token, or NULL */
	const char *tenant;     /* X-Scope-OrgID, or NULL */
	uint64_t timeout_ns;    /* a whole request, connection included */
};

/* What became of one request. */
enum send_result {
	SEND_OK,       /* 2xx: the server has it */
	SEND_RETRY,    /* network error, timeout, 408, 429, 5xx: try again later */
	SEND_REJECTED, /* another 4xx: this profile will never be taken */
	SEND_REFUSED,  /* 401, 403, 407, 3xx: the configuration is wrong; keep everything */
};

/* Set up libcurl once, before threads start. 0 or -1 (message printed). */
int request_global_init(void);

/*
 * Check conf (a usable http(s) URL) and make a request object. 0, or -1
 * with a message naming the URL (without credentials).
 */
int request_init(struct request **rq, const struct request_conf *conf);

/* Free rq. */
void request_release(struct request *rq);

/* The server's URL for messages: no credentials, no query. */
const char *request_where(const struct request *rq);

/*
 * Send one profile (len bytes of gzipped pprof) described by m. *status
 * is the HTTP status (0 when there was no answer); msg gets one line for
 * a person: the server's message or the network error.
 */
enum send_result request_send(struct request *rq, const struct spool_meta *m, const void *data,
			      size_t len, long *status, char *msg, size_t msgcap);

#endif
