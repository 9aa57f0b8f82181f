/*
 * request.c — the Pyroscope ingest request, built to the contract of
 * Grafana Pyroscope's legacy HTTP ingest API as its documentation and
 * source state it (grafana/pyroscope, read at commit 3fe6a457, 2026-08):
 *
 *  - docs/sources/reference-server-api/index.md, "Ingestion": POST /ingest;
 *    query parameters name (required, "app{k=v,...}"), from and until
 *    (required, UNIX time), spyName (optional); for pprof with a custom
 *    sample type configuration: Content-Type multipart/form-data, the
 *    profile in the form file field "profile", the configuration (JSON:
 *    units, aggregation, display-name, sampled) in "sample_type_config";
 *  - pkg/ingester/pyroscope/ingest_handler.go: the query's format=pprof
 *    makes the server take the WHOLE body as the profile, before it looks
 *    at the Content-Type; a multipart body is parsed only when format is
 *    absent (Pyroscope's own tests post multipart to
 *    /ingest?name=pprof.test{qwe=asd}&spyName=..., and so does its Go
 *    client, grafana/pyroscope-go upstream/remote/remote.go). So the
 *    multipart form is sent WITHOUT format=pprof: with it, a real server
 *    would fail to decode "--boundary..." as a profile;
 *  - pkg/og/util/attime/attime.go: from/until of 10 digits are seconds
 *    (13 ms, 16 us, 19 ns); seconds are sent, as documented: from rounded
 *    down, until up. The profile's own time_nanos gives the exact time;
 *  - api/model/labelset/labelset.go: the name is parsed as APP then
 *    "{k=v,k=v}"; values end at ',' or '}' and are trimmed, with no
 *    escaping; APP may hold [A-Za-z0-9_.-/], keys [A-Za-z0-9_.]
 *    (validate.go); keys starting "__" are dropped on ingestion
 *    (pkg/model/labels.go IsLabelAllowedForIngestion);
 *  - pkg/og/convert/pprof/profile.go metricName(): the series' profile
 *    type comes from the sample types, renamed by the sample type
 *    configuration's display-name: "cpu" -> process_cpu, "wall" -> wall,
 *    alloc_/inuse_ -> memory, "mutex_" -> mutex, "block_" -> block. Go's
 *    block and mutex profiles both say contentions/delay, which the
 *    default mapping (pkg/og/storage/tree/pprof.go) calls mutex_count and
 *    mutex_duration: a block profile sent bare would land in the mutex
 *    series. Like pyroscope-go (sample_types.go), block sends display
 *    names block_count/block_duration and mutex mutex_count/mutex_duration;
 *  - X-Scope-OrgID for a multi-tenant server, basic or bearer
 *    authentication (docs "Authentication"; pyroscope-go sets the same);
 *  - errors come back as JSON {"code":...,"message":...}
 *    (pkg/util/http/error.go): 400 bad request, 413, 422, 429.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/push/curlapi.h"
#include "attach/push/request.h"
#include "common/buf.h"
#include "common/err.h"

#ifndef CPROF_VERSION
#define CPROF_VERSION "0.1"
#endif

#define REPLY_MAX (64u << 10) /* bytes of a reply body kept: enough for any message */
#define WHERE_MAX 512u

struct request {
	CURL *curl;
	CURLU *base;          /* scheme, host, port, path ending /ingest; no credentials */
	char where[WHERE_MAX];
	char user[256], password[256]; /* basic authentication, from the URL or --basic-auth */
	struct curl_slist *headers;
	long timeout_ms;
};

/* The sample type configuration a kind needs, or NULL (Pyroscope's defaults are right). */
static const struct {
	const char *kind;
	const char *json;
} sample_configs[] = {
	{ "block", "{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"block_count\"},"
		   "\"delay\":{\"units\":\"lock_nanoseconds\",\"display-name\":\"block_duration\"}}" },
	{ "mutex", "{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"mutex_count\"},"
		   "\"delay\":{\"units\":\"lock_nanoseconds\",\"display-name\":\"mutex_duration\"}}" },
};

int request_global_init(void)
{
	if (curlapi_load() < 0)
		return -1;
	if (curlapi.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return error("cannot initialise libcurl");
	return 0;
}

/* Copy src into dst[cap]; -1 when it does not fit. */
static int copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

/* Split the URL's credentials off and point its path at .../ingest. */
static int request_base(struct request *rq, const char *url)
{
	char *part = NULL, *u = NULL, path[1024];
	size_t n;
	int r = -1;

	rq->base = curlapi.url();
	if (!rq->base)
		return error("out of memory");
	if (curlapi.url_set(rq->base, CURLUPART_URL, url, 0) != CURLUE_OK)
		return error("invalid push URL: expected http://HOST[:PORT] or https://...");
	if (curlapi.url_get(rq->base, CURLUPART_SCHEME, &part, 0) != CURLUE_OK || !part ||
	    (strcmp(part, "http") != 0 && strcmp(part, "https") != 0)) {
		error("invalid push URL: the scheme must be http or https");
		goto out;
	}
	curlapi.free(part);
	part = NULL;
	if (curlapi.url_get(rq->base, CURLUPART_USER, &part, CURLU_URLDECODE) == CURLUE_OK && part) {
		if (copy_str(rq->user, sizeof(rq->user), part) < 0) {
			error("invalid push URL: user name too long");
			goto out;
		}
		curlapi.free(part);
		part = NULL;
		if (curlapi.url_get(rq->base, CURLUPART_PASSWORD, &part, CURLU_URLDECODE) == CURLUE_OK &&
		    part && copy_str(rq->password, sizeof(rq->password), part) < 0) {
			error("invalid push URL: password too long");
			goto out;
		}
	}
	curlapi.free(part);
	part = NULL;
	curlapi.url_set(rq->base, CURLUPART_USER, NULL, 0);
	curlapi.url_set(rq->base, CURLUPART_PASSWORD, NULL, 0);
	curlapi.url_set(rq->base, CURLUPART_QUERY, NULL, 0);
	curlapi.url_set(rq->base, CURLUPART_FRAGMENT, NULL, 0);
	if (curlapi.url_get(rq->base, CURLUPART_PATH, &part, 0) != CURLUE_OK || !part)
		part = NULL;
	n = part ? strlen(part) : 0;
	while (n && part[n - 1] == '/')
		n--;
	/* A URL that already ends in /ingest is taken as it is. */
	if (n >= 7 && !memcmp(part + n - 7, "/ingest", 7))
		r = snprintf(path, sizeof(path), "%.*s", (int)n, part);
	else
		r = snprintf(path, sizeof(path), "%.*s/ingest", (int)n, part ? part : "");
	if (r < 0 || (size_t)r >= sizeof(path)) {
		r = -1;
		error("invalid push URL: path too long");
		goto out;
	}
	r = -1;
	if (curlapi.url_set(rq->base, CURLUPART_PATH, path, 0) != CURLUE_OK ||
	    curlapi.url_get(rq->base, CURLUPART_URL, &u, 0) != CURLUE_OK ||
	    copy_str(rq->where, sizeof(rq->where), u) < 0) {
		error("invalid push URL: too long");
		goto out;
	}
	r = 0;
out:
	curlapi.free(part);
	curlapi.free(u);
	return r;
}

int request_init(struct request **out, const struct request_conf *c)
{
	struct request *rq;
	char h[600];
	const char *colon;

	*out = NULL;
	rq = calloc(1, sizeof(*rq));
	if (!rq)
		return error("out of memory");
	if (request_base(rq, c->url) < 0)
		goto err;
	if (c->basic_auth) {
		colon = strchr(c->basic_auth, ':');
		if (!colon || colon == c->basic_auth) {
			error("invalid basic authentication: expected USER:PASSWORD");
			goto err;
		}
		if ((size_t)(colon - c->basic_auth) >= sizeof(rq->user) ||
		    copy_str(rq->password, sizeof(rq->password), colon + 1) < 0) {
			error("invalid basic authentication: too long");
			goto err;
		}
		memcpy(rq->user, c->basic_auth, (size_t)(colon - c->basic_auth));
		rq->user[colon - c->basic_auth] = 0;
	}
	/* No "Expect: 100-continue" round trip: the body is small and the server speaks HTTP/1.1. */
	rq->headers = curlapi.slist_append(NULL, "Expect:");
	if (c->tenant && rq->headers) {
		if (snprintf(h, sizeof(h), "X-Scope-OrgID: %s", c->tenant) >= (int)sizeof(h) ||
		    strpbrk(c->tenant, "\r\n")) {
			error("invalid tenant: too long or holds a line break");
			goto err;
		}
		rq->headers = curlapi.slist_append(rq->headers, h);
	}
	if (c->token && rq->headers) {
		if (snprintf(h, sizeof(h), "Authorization: Bearer %s", c->token) >= (int)sizeof(h) ||
		    strpbrk(c->token, "\r\n")) {
			error("invalid bearer token: too long or holds a line break");
			goto err;
		}
		rq->headers = curlapi.slist_append(rq->headers, h);
		memset(h, 0, sizeof(h));
	}
	rq->curl = curlapi.easy_init();
	if (!rq->headers || !rq->curl) {
		error("out of memory");
		goto err;
	}
	rq->timeout_ms = (long)(c->timeout_ns / 1000000);
	if (rq->timeout_ms < 1)
		rq->timeout_ms = 1;
	*out = rq;
	return 0;
err:
	request_release(rq);
	return -1;
}

void request_release(struct request *rq)
{
	if (!rq)
		return;
	if (rq->curl)
		curlapi.easy_cleanup(rq->curl);
	curlapi.url_cleanup(rq->base);
	curlapi.slist_free_all(rq->headers);
	memset(rq->password, 0, sizeof(rq->password));
	free(rq);
}

const char *request_where(const struct request *rq)
{
	return rq->where;
}

/* libcurl's body callback: keep up to REPLY_MAX bytes, swallow the rest. */
static size_t reply_keep(char *p, size_t size, size_t n, void *ctx)
{
	struct buf *b = ctx;
	size_t len = size * n, room = b->limit - b->len;

	if (room)
		buf_append(b, p, len < room ? len : room);
	return len;
}

/* Append "KEY=VALUE" to the query, VALUE URL-encoded by libcurl. */
static int query_add(CURLU *u, const char *key, const char *value)
{
	char q[SPOOL_NAME_MAX + 64];
	int n = snprintf(q, sizeof(q), "%s=%s", key, value);

	if (n < 0 || (size_t)n >= sizeof(q))
		return -1;
	return curlapi.url_set(u, CURLUPART_QUERY, q, CURLU_APPENDQUERY | CURLU_URLENCODE) == CURLUE_OK
		       ? 0
		       : -1;
}

/* The part of the request that depends on the profile: URL with its query, and the form. */
static int request_build(struct request *rq, const struct spool_meta *m, const void *data,
			 size_t len, CURLU **url, curl_mime **form)
{
	char from[24], until[24];
	curl_mimepart *part;
	size_t i;

	*form = NULL;
	*url = curlapi.url_dup(rq->base);
	if (!*url)
		return -1;
	snprintf(from, sizeof(from), "%llu", (unsigned long long)(m->from_ns / 1000000000ull));
	snprintf(until, sizeof(until), "%llu",
		 (unsigned long long)((m->until_ns + 999999999ull) / 1000000000ull));
	if (query_add(*url, "name", m->name) < 0 || query_add(*url, "from", from) < 0 ||
	    query_add(*url, "until", until) < 0 || query_add(*url, "spyName", "cprof") < 0)
		return -1;
	*form = curlapi.mime_init(rq->curl);
	if (!*form || !(part = curlapi.mime_addpart(*form)) || curlapi.mime_name(part, "profile") ||
	    curlapi.mime_filename(part, "profile.pb.gz") ||
	    curlapi.mime_type(part, "application/octet-stream") || curlapi.mime_data(part, data, len))
		return -1;
	for (i = 0; i < sizeof(sample_configs) / sizeof(sample_configs[0]); i++) {
		if (strcmp(m->kind, sample_configs[i].kind) != 0)
			continue;
		if (!(part = curlapi.mime_addpart(*form)) || curlapi.mime_name(part, "sample_type_config") ||
		    curlapi.mime_filename(part, "sample_type_config.json") ||
		    curlapi.mime_type(part, "application/json") ||
		    curlapi.mime_data(part, sample_configs[i].json, CURL_ZERO_TERMINATED))
			return -1;
	}
	return 0;
}

enum send_result request_send(struct request *rq, const struct spool_meta *m, const void *data,
			      size_t len, long *status, char *msg, size_t msgcap)
{
	char errbuf[CURL_ERROR_SIZE];
	enum send_result res;
	curl_mime *form = NULL;
	CURLU *url = NULL;
	struct buf reply;
	CURLcode cc;

	*status = 0;
	buf_init(&reply, REPLY_MAX);
	if (request_build(rq, m, data, len, &url, &form) < 0) {
		snprintf(msg, msgcap, "cannot build the request: out of memory");
		res = SEND_RETRY;
		goto out;
	}
	errbuf[0] = 0;
	curlapi.easy_reset(rq->curl);
	curlapi.easy_setopt(rq->curl, CURLOPT_CURLU, url);
	curlapi.easy_setopt(rq->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curlapi.easy_setopt(rq->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curlapi.easy_setopt(rq->curl, CURLOPT_NOSIGNAL, 1L);
	curlapi.easy_setopt(rq->curl, CURLOPT_TIMEOUT_MS, rq->timeout_ms);
	curlapi.easy_setopt(rq->curl, CURLOPT_MIMEPOST, form);
	curlapi.easy_setopt(rq->curl, CURLOPT_HTTPHEADER, rq->headers);
	curlapi.easy_setopt(rq->curl, CURLOPT_USERAGENT, "cprof-attach/" CPROF_VERSION);
	curlapi.easy_setopt(rq->curl, CURLOPT_ERRORBUFFER, errbuf);
	curlapi.easy_setopt(rq->curl, CURLOPT_WRITEFUNCTION, reply_keep);
	curlapi.easy_setopt(rq->curl, CURLOPT_WRITEDATA, &reply);
	if (rq->user[0]) {
		curlapi.easy_setopt(rq->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curlapi.easy_setopt(rq->curl, CURLOPT_USERNAME, rq->user);
		curlapi.easy_setopt(rq->curl, CURLOPT_PASSWORD, rq->password);
	}
	cc = curlapi.easy_perform(rq->curl);
	if (cc != CURLE_OK) {
		snprintf(msg, msgcap, "%s", errbuf[0] ? errbuf : curlapi.easy_strerror(cc));
		res = SEND_RETRY;
		goto out;
	}
	curlapi.easy_getinfo(rq->curl, CURLINFO_RESPONSE_CODE, status);
	reply_message((const char *)reply.data, reply.len, msg, msgcap);
	if (*status >= 200 && *status < 300)
		res = SEND_OK;
	else if (*status == 408 || *status == 429 || *status >= 500)
		res = SEND_RETRY;
	else if (*status == 401 || *status == 403 || *status == 407 || *status < 200 ||
		 (*status >= 300 && *status < 400))
		res = SEND_REFUSED;
	else
		res = SEND_REJECTED;
out:
	curlapi.mime_free(form);
	curlapi.url_cleanup(url);
	buf_release(&reply);
	return res;
}
