/*
 * pyrecv — a stand-in for a Grafana Pyroscope server in the tests: an HTTP
 * receiver on 127.0.0.1 (an ephemeral port, printed as "port N" on
 * stdout) that checks each request against the ingest contract cprof
 * follows (attach/push/request.c: method POST, path /ingest, exactly the
 * query parameters name, from, until (seconds) and spyName=cprof, no
 * format (a multipart body with format=pprof would be taken whole as the
 * profile), Content-Type multipart/form-data with a boundary, one form
 * file field "profile" holding gzip data, "sample_type_config" only where
 * expected, the authentication and tenant headers where expected). A
 * request that passes is stored as DIR/NNNN.pb.gz with DIR/NNNN.query
 * and logged as "ok NNNN NAME FROM UNTIL" in DIR/log; one that does not
 * is logged "VIOLATION why" and answered 400.
 *
 * usage: pyrecv -d DIR [--app APP] [--label K=V]... [--auth HEADERVALUE]
 *               [--tenant ID] [--config block|mutex] [--fail-503 N]
 *               [--fail-400 MESSAGE] [--delay-ms MS]
 * Modes: --fail-503 N answers the first N valid requests 503; --fail-400
 * answers every valid request 400 with Pyroscope's JSON error carrying
 * MESSAGE; --delay-ms holds every answer (a slow server).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (64 << 10)
#define BODY_MAX (64 << 20)
#define MAX_LABELS 32

static const char *dir, *want_app, *want_auth, *want_tenant, *want_config, *fail400;
static const char *want_labels[MAX_LABELS];
static int nlabels, fail503, delay_ms, stored;
static char why[512];

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	char path[4096];
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/log", dir);
	f = fopen(path, "a");
	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return -1;
}

/* Read exactly n bytes (5 s without progress is a failure). */
static int read_full(int fd, char *p, size_t n)
{
	struct pollfd pf = { fd, POLLIN, 0 };
	ssize_t r;

	while (n) {
		if (poll(&pf, 1, 5000) <= 0)
			return -1;
		r = read(fd, p, n);
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static void write_all(int fd, const char *p, size_t n)
{
	ssize_t r;

	while (n && (r = write(fd, p, n)) > 0) {
		p += r;
		n -= (size_t)r;
	}
}

static void answer(int fd, int status, const char *reason, const char *body)
{
	char h[1024];
	int n = snprintf(h, sizeof(h),
			 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
			 status, reason, strlen(body));

	if (delay_ms)
		usleep((useconds_t)delay_ms * 1000);
	write_all(fd, h, (size_t)n);
	write_all(fd, body, strlen(body));
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* URL-decode s[0..n) into out[cap]. */
static int urldecode(const char *s, size_t n, char *out, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		int c = s[i];

		if (c == '+')
			c = ' ';
		else if (c == '%') {
			if (i + 2 >= n || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0)
				return -1;
			c = hexval(s[i + 1]) * 16 + hexval(s[i + 2]);
			i += 2;
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = 0;
	return 0;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* name=APP{k=v,...}: Pyroscope's labelset syntax, the app and the labels expected. */
static int check_name(const char *name)
{
	const char *b = strchr(name, '{'), *p;
	char labels[2048];
	int i;

	if (!b || name[strlen(name) - 1] != '}')
		return bad("name \"%s\" is not APP{labels}", name);
	for (p = name; p < b; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr("_.-/", *p)))
			return bad("name \"%s\": application character '%c' not allowed", name, *p);
	if (b == name)
		return bad("name \"%s\": no application", name);
	if (want_app && ((size_t)(b - name) != strlen(want_app) || strncmp(name, want_app, (size_t)(b - name))))
		return bad("name \"%s\": application is not \"%s\"", name, want_app);
	snprintf(labels, sizeof(labels), ",%.*s,", (int)(strlen(b) - 2), b + 1);
	/* each label: key of [A-Za-z0-9_.], a value without ',' '}' */
	for (p = labels + 1; *p;) {
		const char *c = strchr(p, ','), *eq = memchr(p, '=', (size_t)(c - p)), *k;

		if (c == p)
			break;
		if (!eq || eq == p || eq + 1 == c)
			return bad("name \"%s\": label \"%.*s\" is not k=v", name, (int)(c - p), p);
		for (k = p; k < eq; k++)
			if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
			      (*k >= '0' && *k <= '9') || *k == '_' || *k == '.'))
				return bad("name \"%s\": label key character '%c'", name, *k);
		p = c + 1;
	}
	for (i = 0; i < nlabels; i++) {
		char pat[512];

		snprintf(pat, sizeof(pat), ",%s,", want_labels[i]);
		if (!strstr(labels, pat))
			return bad("name \"%s\": label %s missing", name, want_labels[i]);
	}
	if (!strstr(labels, ",hostname=") || !strstr(labels, ",pid="))
		return bad("name \"%s\": no hostname or pid label", name);
	return 0;
}

/* The query: exactly name, from, until, spyName. */
static int check_query(char *q, char *name, size_t ncap, char *from, char *until)
{
	char key[64], val[2048];
	int have = 0;

	while (q && *q) {
		char *amp = strchr(q, '&'), *eq;
		size_t n = amp ? (size_t)(amp - q) : strlen(q);

		eq = memchr(q, '=', n);
		if (!eq || urldecode(q, (size_t)(eq - q), key, sizeof(key)) < 0 ||
		    urldecode(eq + 1, n - (size_t)(eq - q) - 1, val, sizeof(val)) < 0)
			return bad("query parameter \"%.*s\" malformed", (int)n, q);
		if (!strcmp(key, "name") && !(have & 1)) {
			snprintf(name, ncap, "%s", val);
			have |= 1;
		} else if (!strcmp(key, "from") && !(have & 2)) {
			snprintf(from, 32, "%.31s", val);
			have |= 2;
		} else if (!strcmp(key, "until") && !(have & 4)) {
			snprintf(until, 32, "%.31s", val);
			have |= 4;
		} else if (!strcmp(key, "spyName") && !(have & 8)) {
			if (strcmp(val, "cprof"))
				return bad("spyName is \"%s\", not cprof", val);
			have |= 8;
		} else if (!strcmp(key, "format")) {
			return bad("format=%s with a multipart body: Pyroscope would take the whole body as the profile", val);
		} else {
			return bad("unexpected or repeated query parameter \"%s\"", key);
		}
		q = amp ? amp + 1 : NULL;
	}
	if (have != 15)
		return bad("query lacks name, from, until or spyName (have %#x)", have);
	if (check_name(name) < 0)
		return -1;
	if (!all_digits(from) || !all_digits(until) || strlen(from) != 10 || strlen(until) != 10)
		return bad("from \"%s\" / until \"%s\" are not UNIX seconds", from, until);
	if (strtoull(from, NULL, 10) > strtoull(until, NULL, 10))
		return bad("from %s is after until %s", from, until);
	if (llabs((long long)strtoull(from, NULL, 10) - (long long)time(NULL)) > 86400)
		return bad("from %s is not near now", from);
	return 0;
}

/* Find needle in hay[0..n). */
static const char *memfind(const char *hay, size_t n, const char *needle, size_t m)
{
	size_t i;

	for (i = 0; m <= n && i <= n - m; i++)
		if (!memcmp(hay + i, needle, m))
			return hay + i;
	return NULL;
}

/* The multipart body: "profile" (gzip) once, "sample_type_config" as expected, nothing else. */
static int check_form(const char *ctype, const char *body, size_t len, const char **prof, size_t *plen)
{
	char delim[256], config[1024] = "";
	const char *b = strstr(ctype, "boundary="), *p, *end = body + len;
	int nprofile = 0, nconfig = 0;
	size_t dl;

	if (strncasecmp(ctype, "multipart/form-data;", 20) || !b)
		return bad("Content-Type \"%s\" is not multipart/form-data with a boundary", ctype);
	b += 9;
	if (*b == '"')
		b++;
	dl = (size_t)snprintf(delim, sizeof(delim), "--%.*s", (int)strcspn(b, "\";\r\n "), b);
	p = memfind(body, len, delim, dl);
	if (p != body)
		return bad("body does not start with the boundary");
	for (;;) {
		const char *h = p + dl, *he, *data, *next;
		char disp[512] = "", fname[256] = "";

		if (end - h >= 2 && !memcmp(h, "--", 2))
			break; /* closing delimiter */
		if (end - h < 2 || memcmp(h, "\r\n", 2))
			return bad("boundary not followed by CRLF");
		h += 2;
		he = memfind(h, (size_t)(end - h), "\r\n\r\n", 4);
		if (!he)
			return bad("part without headers' end");
		data = he + 4;
		next = memfind(data, (size_t)(end - data), delim, dl);
		if (!next || next - data < 2 || memcmp(next - 2, "\r\n", 2))
			return bad("part without a closing boundary");
		{
			const char *d = memfind(h, (size_t)(he - h), "Content-Disposition: form-data; name=\"", 38);

			if (!d)
				return bad("part without Content-Disposition form-data");
			d += 38;
			snprintf(disp, sizeof(disp), "%.*s", (int)strcspn(d, "\""), d);
			d = memfind(h, (size_t)(he - h), "filename=\"", 10);
			if (d)
				snprintf(fname, sizeof(fname), "%.*s", (int)strcspn(d + 10, "\""), d + 10);
		}
		if (!strcmp(disp, "profile")) {
			if (!fname[0])
				return bad("field profile is not a form file");
			*prof = data;
			*plen = (size_t)(next - 2 - data);
			nprofile++;
		} else if (!strcmp(disp, "sample_type_config")) {
			snprintf(config, sizeof(config), "%.*s", (int)(next - 2 - data), data);
			nconfig++;
		} else {
			return bad("unexpected form field \"%s\"", disp);
		}
		p = next;
	}
	if (nprofile != 1)
		return bad("%d fields named profile", nprofile);
	if (*plen < 2 || (unsigned char)(*prof)[0] != 0x1f || (unsigned char)(*prof)[1] != 0x8b)
		return bad("the profile is not gzip data");
	if (!want_config && nconfig)
		return bad("a sample_type_config was not expected: %s", config);
	if (want_config) {
		char a[64], d[64];

		snprintf(a, sizeof(a), "\"display-name\":\"%s_count\"", want_config);
		snprintf(d, sizeof(d), "\"display-name\":\"%s_duration\"", want_config);
		if (nconfig != 1 || !strstr(config, "\"contentions\":{") || !strstr(config, "\"delay\":{") ||
		    !strstr(config, a) || !strstr(config, d))
			return bad("sample_type_config \"%s\" does not map contentions/delay to %s", config,
				   want_config);
	}
	return 0;
}

/* A header's value (case-insensitive name) from the head, or NULL. */
static const char *header(const char *head, const char *name, char *out, size_t cap)
{
	const char *p = head;
	size_t n = strlen(name);

	while ((p = strstr(p, "\r\n"))) {
		p += 2;
		if (!strncasecmp(p, name, n) && p[n] == ':') {
			const char *v = p + n + 1;

			while (*v == ' ')
				v++;
			snprintf(out, cap, "%.*s", (int)strcspn(v, "\r\n"), v);
			return out;
		}
	}
	return NULL;
}

/* One request on fd. 0 to go on with the connection, -1 to close it. */
static int serve_one(int fd)
{
	static char head[HEAD_MAX + 1];
	char method[16], target[4096], name[2048] = "", from[32] = "", until[32] = "", v[1024], path[4096];
	char *body = NULL, *q;
	const char *prof = NULL, *he;
	size_t hl = 0, blen, plen = 0;
	struct pollfd pf = { fd, POLLIN, 0 };
	ssize_t r;
	int ok;
	FILE *f;

	/* The head, byte by byte up to the blank line (simple and enough here). */
	for (;;) {
		if (hl == HEAD_MAX)
			return -1;
		if (poll(&pf, 1, 30000) <= 0)
			return -1;
		r = read(fd, head + hl, 1);
		if (r <= 0)
			return -1;
		hl++;
		head[hl] = 0;
		if (hl >= 4 && !memcmp(head + hl - 4, "\r\n\r\n", 4))
			break;
	}
	he = head;
	if (sscanf(he, "%15s %4095s", method, target) != 2)
		return -1;
	if (header(head, "Transfer-Encoding", v, sizeof(v)))
		ok = bad("Transfer-Encoding %s: a Content-Length was expected", v);
	else
		ok = 0;
	blen = header(head, "Content-Length", v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
	if (blen > BODY_MAX)
		return -1;
	if (header(head, "Expect", v, sizeof(v)))
		write_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	body = malloc(blen + 1);
	if (!body || read_full(fd, body, blen) < 0) {
		free(body);
		return -1;
	}
	if (ok == 0 && strcmp(method, "POST"))
		ok = bad("method %s, not POST", method);
	q = strchr(target, '?');
	if (q)
		*q++ = 0;
	if (ok == 0 && strcmp(target, "/ingest"))
		ok = bad("path %s, not /ingest", target);
	if (ok == 0)
		ok = check_query(q, name, sizeof(name), from, until);
	if (ok == 0) {
		if (!header(head, "Content-Type", v, sizeof(v)))
			ok = bad("no Content-Type");
		else
			ok = check_form(v, body, blen, &prof, &plen);
	}
	if (ok == 0) {
		const char *a = header(head, "Authorization", v, sizeof(v));

		if (want_auth && (!a || strcmp(a, want_auth)))
			ok = bad("Authorization \"%s\" is not the one expected", a ? a : "(none)");
		else if (!want_auth && a)
			ok = bad("an Authorization header came unasked");
	}
	if (ok == 0) {
		const char *t = header(head, "X-Scope-OrgID", v, sizeof(v));

		if (want_tenant && (!t || strcmp(t, want_tenant)))
			ok = bad("X-Scope-OrgID \"%s\" is not \"%s\"", t ? t : "(none)", want_tenant);
		else if (!want_tenant && t)
			ok = bad("an X-Scope-OrgID header came unasked");
	}
	if (ok < 0) {
		logf_("VIOLATION %s", why);
		snprintf(v, sizeof(v), "{\"code\":\"invalid_argument\",\"message\":\"pyrecv: contract: %s\"}", "see log");
		answer(fd, 400, "Bad Request", v);
	} else if (fail503 > 0) {
		fail503--;
		logf_("503 %s %s %s", name, from, until);
		answer(fd, 503, "Service Unavailable", "{\"code\":\"unavailable\",\"message\":\"try later\"}");
	} else if (fail400) {
		logf_("400 %s %s %s", name, from, until);
		snprintf(v, sizeof(v), "{\"code\":\"invalid_argument\",\"message\":\"%s\"}\n", fail400);
		answer(fd, 400, "Bad Request", v);
	} else {
		stored++;
		snprintf(path, sizeof(path), "%s/%04d.pb.gz", dir, stored);
		f = fopen(path, "w");
		if (f) {
			fwrite(prof, 1, plen, f);
			fclose(f);
		}
		snprintf(path, sizeof(path), "%s/%04d.query", dir, stored);
		f = fopen(path, "w");
		if (f) {
			fprintf(f, "name=%s\nfrom=%s\nuntil=%s\n", name, from, until);
			fclose(f);
		}
		logf_("ok %04d %s %s %s", stored, name, from, until);
		answer(fd, 200, "OK", "");
	}
	free(body);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { 0 };
	socklen_t al = sizeof(a);
	int s, c, i, one = 1;

	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val)
			goto usage;
		if (!strcmp(o, "-d"))
			dir = val;
		else if (!strcmp(o, "--app"))
			want_app = val;
		else if (!strcmp(o, "--label") && nlabels < MAX_LABELS)
			want_labels[nlabels++] = val;
		else if (!strcmp(o, "--auth"))
			want_auth = val;
		else if (!strcmp(o, "--tenant"))
			want_tenant = val;
		else if (!strcmp(o, "--config"))
			want_config = val;
		else if (!strcmp(o, "--fail-503"))
			fail503 = atoi(val);
		else if (!strcmp(o, "--fail-400"))
			fail400 = val;
		else if (!strcmp(o, "--delay-ms"))
			delay_ms = atoi(val);
		else
			goto usage;
		i++;
	}
	if (!dir)
		goto usage;
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 16) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &al) < 0) {
		perror("pyrecv: listen");
		return 1;
	}
	printf("port %d\n", ntohs(a.sin_port));
	fflush(stdout);
	for (;;) {
		c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		while (serve_one(c) == 0)
			;
		close(c);
	}
usage:
	fprintf(stderr, "usage: pyrecv -d DIR [--app APP] [--label K=V]... [--auth VALUE] [--tenant ID] "
			"[--config block|mutex] [--fail-503 N] [--fail-400 MESSAGE] [--delay-ms MS]\n");
	return 2;
}
