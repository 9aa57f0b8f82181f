/*
 * sanitize.c — the one escaper of control bytes for what reaches a
 * terminal (common/err.c's lines, --top, --stats, the text writers). A
 * name without a control byte, the common case, is copied in one append.
 */
#include <string.h>

#include "common/buf.h"
#include "common/sanitize.h"

static const char hexd[] = "0123456789abcdef";

size_t sanitize_ctl(const unsigned char *p, size_t n)
{
	if (n == 0)
		return 0;
	if (p[0] < 0x20 || p[0] == 0x7f)
		return 1;
	if (p[0] == 0xc2 && n > 1 && p[1] >= 0x80 && p[1] <= 0x9f)
		return 2;
	return 0;
}

/* "\xNN" for byte c into o[4]. */
static void esc(unsigned char c, char o[4])
{
	o[0] = '\\';
	o[1] = 'x';
	o[2] = hexd[c >> 4];
	o[3] = hexd[c & 15];
}

int sanitize_buf(struct buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, run = 0, k, j;
	char e[4];
	int r = 0;

	while (i < n && r == 0) {
		k = sanitize_ctl(p + i, n - i);
		if (!k) {
			i++;
			continue;
		}
		if (i > run)
			r = buf_append(b, p + run, i - run);
		for (j = 0; j < k && r == 0; j++) {
			esc(p[i + j], e);
			r = buf_append(b, e, sizeof(e));
		}
		i += k;
		run = i;
	}
	if (r == 0 && n > run)
		r = buf_append(b, p + run, n - run);
	return r;
}

size_t sanitize_str(char *out, size_t cap, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0, k, j;

	if (cap == 0)
		return 0;
	while (i < n) {
		k = sanitize_ctl(p + i, n - i);
		if (!k) {
			if (o + 1 >= cap)
				break;
			out[o++] = (char)p[i++];
			continue;
		}
		if (o + 4 * k >= cap)
			break;
		for (j = 0; j < k; j++, o += 4)
			esc(p[i + j], out + o);
		i += k;
	}
	out[o] = 0;
	return o;
}
