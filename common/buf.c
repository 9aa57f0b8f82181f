/*
 * buf.c — growable buffer. Growth doubles, so appending n bytes one by one
 * costs O(n) copies; the hard cap keeps a hostile or runaway producer from
 * taking all memory.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"

void buf_init(struct buf *b, size_t limit)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->limit = limit;
}

void buf_release(struct buf *b)
{
	free(b->data);
	buf_init(b, b->limit);
}

int buf_reserve(struct buf *b, size_t n)
{
	size_t need, cap;
	unsigned char *p;

	if (n > b->limit || b->len > b->limit - n) {
		errno = EFBIG;
		return -1;
	}
	need = b->len + n + 1; /* room for the NUL */
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > (size_t)-1 / 2 ? need : cap * 2;
	if (cap > b->limit + 1)
		cap = b->limit + 1;
	p = realloc(b->data, cap);
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_hex(struct buf *b, uint64_t v, unsigned width)
{
	static const char digit[] = "0123456789abcdef";
	char s[16];
	unsigned n = 0;

	do
		s[sizeof(s) - ++n] = digit[v & 15];
	while ((v >>= 4) != 0);
	while (n < width && n < sizeof(s))
		s[sizeof(s) - ++n] = '0';
	return buf_append(b, s + sizeof(s) - n, n);
}

/*
 * Formatted straight into the room left when it fits (most of the time:
 * growth doubles), so the text is formatted once, not measured first:
 * a 200-thread dump made 12000 calls of vsnprintf where 6000 do.
 */
int buf_printf(struct buf *b, const char *fmt, ...)
{
	size_t room = b->cap > b->len ? b->cap - b->len : 0; /* cap <= limit + 1 */
	va_list ap;
	int n;

	if (room > 1) {
		va_start(ap, fmt);
		n = vsnprintf((char *)b->data + b->len, room, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < room) {
			b->len += (size_t)n;
			return 0;
		}
		b->data[b->len] = 0; /* what did not fit is not appended */
		if (n < 0)
			return -1;
	} else {
		va_start(ap, fmt);
		n = vsnprintf(NULL, 0, fmt, ap);
		va_end(ap);
	}
	if (n < 0 || buf_reserve(b, (size_t)n) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int buf_quote(struct buf *b, const char *s, int json)
{
	int r = buf_append(b, "\"", 1);

	for (; *s && r == 0; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			r = buf_printf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			r = json ? buf_printf(b, "\\u%04x", c) : buf_printf(b, "\\x%02x", c);
		else
			r = buf_append(b, s, 1);
	}
	return r ? r : buf_append(b, "\"", 1);
}

int buf_read_fd(struct buf *b, int fd)
{
	size_t want;
	ssize_t r;
	char probe;

	for (;;) {
		want = b->limit - b->len < 65536 ? b->limit - b->len : 65536;
		if (want == 0) {
			/* At the cap: fine only if the file ends exactly here. */
			r = read(fd, &probe, 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r > 0)
				errno = EFBIG;
			return r == 0 ? 0 : -1;
		}
		if (buf_reserve(b, want) < 0)
			return -1;
		r = read(fd, b->data + b->len, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 0;
		b->len += (size_t)r;
		b->data[b->len] = 0;
	}
}

void buf_truncate(struct buf *b, size_t len)
{
	if (!b->data || len > b->len)
		return;
	b->len = len;
	b->data[len] = 0;
}
