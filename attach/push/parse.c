/*
 * parse.c — metadata text is "key=value" lines, one per key, in the order
 * spool_meta_format writes them; a reader that finds an unknown key skips
 * it, so a later version may add fields without stranding older spools.
 * The reply's JSON is not parsed as JSON: only the string value after the
 * first "message" key is taken, with its escapes, which is all a person
 * needs to read; anything else falls back to the raw first line.
 */
#include <stdio.h>
#include <string.h>

#include "attach/push/parse.h"

/* A whole decimal number of at most 20 digits that fits 64 bits. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0 || n > 20)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Copy a printable value (no control bytes, no DEL) of n bytes into out[cap], NUL-terminated. */
static int copy_text(const char *s, size_t n, char *out, size_t cap)
{
	size_t i;

	if (n == 0 || n >= cap)
		return -1;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
			return -1;
	memcpy(out, s, n);
	out[n] = 0;
	return 0;
}

enum { M_VERSION = 1, M_NAME = 2, M_KIND = 4, M_FROM = 8, M_UNTIL = 16, M_CAPTURE = 32, M_PID = 64,
       M_ALL = 127 };

int spool_meta_parse(const char *text, size_t len, struct spool_meta *m)
{
	const char *p = text, *end = text + len;
	unsigned seen = 0, bit;
	uint64_t v;

	memset(m, 0, sizeof(*m));
	if (len > SPOOL_META_MAX)
		return -1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eq, *val;
		size_t klen, vlen;

		if (!nl)
			return -1; /* every line ends: a cut-short file is refused */
		eq = memchr(p, '=', (size_t)(nl - p));
		if (!eq)
			return -1;
		klen = (size_t)(eq - p);
		val = eq + 1;
		vlen = (size_t)(nl - val);
#define KEY(s) (klen == sizeof(s) - 1 && !memcmp(p, s, klen))
		if (KEY("version"))
			bit = M_VERSION;
		else if (KEY("name"))
			bit = M_NAME;
		else if (KEY("kind"))
			bit = M_KIND;
		else if (KEY("from_ns"))
			bit = M_FROM;
		else if (KEY("until_ns"))
			bit = M_UNTIL;
		else if (KEY("capture"))
			bit = M_CAPTURE;
		else if (KEY("pid"))
			bit = M_PID;
		else
			bit = 0;
#undef KEY
		if (bit & seen)
			return -1;
		seen |= bit;
		switch (bit) {
		case M_VERSION:
			if (parse_u64(val, vlen, &v) < 0 || v != SPOOL_META_VERSION)
				return -1;
			break;
		case M_NAME:
			if (copy_text(val, vlen, m->name, sizeof(m->name)) < 0)
				return -1;
			break;
		case M_KIND:
			if (copy_text(val, vlen, m->kind, sizeof(m->kind)) < 0)
				return -1;
			break;
		case M_FROM:
			if (parse_u64(val, vlen, &m->from_ns) < 0)
				return -1;
			break;
		case M_UNTIL:
			if (parse_u64(val, vlen, &m->until_ns) < 0)
				return -1;
			break;
		case M_CAPTURE:
			if (parse_u64(val, vlen, &v) < 0 || v > 0xffffffffu)
				return -1;
			m->capture = (unsigned)v;
			break;
		case M_PID:
			if (parse_u64(val, vlen, &v) < 0 || v == 0 || v > 0x7fffffff)
				return -1;
			m->pid = (int)v;
			break;
		}
		p = nl + 1;
	}
	if (seen != M_ALL || m->until_ns < m->from_ns)
		return -1;
	return 0;
}

int spool_meta_format(const struct spool_meta *m, char *out, size_t cap)
{
	int n = snprintf(out, cap,
			 "version=%u\nname=%s\nkind=%s\nfrom_ns=%llu\nuntil_ns=%llu\ncapture=%u\npid=%d\n",
			 SPOOL_META_VERSION, m->name, m->kind, (unsigned long long)m->from_ns,
			 (unsigned long long)m->until_ns, m->capture, m->pid);

	if (n < 0 || (size_t)n >= cap || (size_t)n > SPOOL_META_MAX)
		return -1;
	return n;
}

/* Append byte c to out[*o] (cap bytes with the NUL), printable or '?'. */
static void put(char *out, size_t cap, size_t *o, unsigned char c)
{
	if (*o + 1 >= cap)
		return;
	out[(*o)++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
}

/* The JSON string value after "message": at s[0..n); 0, or -1 when there is none. */
static int json_message(const char *s, size_t n, char *out, size_t cap)
{
	static const char key[] = "\"message\"";
	size_t i, o = 0;

	for (i = 0; i + sizeof(key) - 1 <= n; i++)
		if (!memcmp(s + i, key, sizeof(key) - 1))
			break;
	if (i + sizeof(key) - 1 > n)
		return -1;
	i += sizeof(key) - 1;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	if (i >= n || s[i] != ':')
		return -1;
	i++;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	if (i >= n || s[i] != '"')
		return -1;
	for (i++; i < n && s[i] != '"'; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\') {
			if (++i >= n)
				break;
			c = (unsigned char)s[i];
			switch (c) {
			case 'n': case 't': case 'r': case 'b': case 'f':
				c = ' ';
				break;
			case 'u': /* \uXXXX: kept as '?' unless plain ASCII */
				if (i + 4 < n) {
					unsigned v = 0, k;

					for (k = 1; k <= 4; k++) {
						char h = s[i + k];

						v <<= 4;
						if (h >= '0' && h <= '9')
							v |= (unsigned)(h - '0');
						else if (h >= 'a' && h <= 'f')
							v |= (unsigned)(h - 'a' + 10);
						else if (h >= 'A' && h <= 'F')
							v |= (unsigned)(h - 'A' + 10);
						else
							v = 0x100000;
					}
					i += 4;
					c = v < 0x80 ? (unsigned char)v : '?';
				} else {
					i = n;
					continue;
				}
				break;
			}
		}
		put(out, cap, &o, c);
	}
	out[o] = 0;
	return o ? 0 : -1;
}

void reply_message(const char *body, size_t len, char *out, size_t cap)
{
	size_t i, o = 0;

	out[0] = 0;
	if (body && len && json_message(body, len, out, cap) == 0)
		return;
	for (i = 0; body && i < len && body[i] != '\n' && body[i] != '\r'; i++)
		put(out, cap, &o, (unsigned char)body[i]);
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = 0;
	if (!o)
		snprintf(out, cap, "(no message)");
}
