/*
 * naming.c — template expansion, one pass, bounded by the output buffer.
 */
#include <stdio.h>
#include <string.h>

#include "attach/cli/naming.h"

static int put(char *out, size_t cap, size_t *n, const char *s)
{
	size_t len = strlen(s);

	if (len >= cap - *n)
		return -1;
	memcpy(out + *n, s, len + 1);
	*n += len;
	return 0;
}

int name_expand(const char *tmpl, const struct name_vars *v, char *out, size_t cap, char *why,
		size_t why_cap)
{
	char tmp[64], one[2] = { 0, 0 };
	const char *p;
	struct tm tm;
	size_t n = 0;

	if (cap == 0)
		return -1;
	out[0] = 0;
	for (p = tmpl; *p; p++) {
		if (*p != '%') {
			one[0] = *p;
			if (put(out, cap, &n, one) < 0)
				goto toolong;
			continue;
		}
		switch (*++p) {
		case 'p':
			snprintf(tmp, sizeof(tmp), "%d", (int)v->pid);
			break;
		case 'n':
			snprintf(tmp, sizeof(tmp), "%u", v->number);
			break;
		case 't':
			gmtime_r(&v->when, &tm);
			strftime(tmp, sizeof(tmp), "%Y%m%dT%H%M%SZ", &tm);
			break;
		case 'T':
			snprintf(tmp, sizeof(tmp), "%s", v->type);
			break;
		case '%':
			snprintf(tmp, sizeof(tmp), "%%");
			break;
		case 0:
			snprintf(why, why_cap, "a lone %% at the end (write %%%% for a percent sign)");
			return -1;
		default:
			snprintf(why, why_cap,
				 "unknown %%%c (use %%p pid, %%t time, %%n number, %%T type, %%%% percent)",
				 *p);
			return -1;
		}
		if (put(out, cap, &n, tmp) < 0)
			goto toolong;
	}
	return 0;
toolong:
	snprintf(why, why_cap, "the name is too long");
	return -1;
}

int name_varies(const char *tmpl)
{
	const char *p;

	for (p = tmpl; *p; p++) {
		if (*p != '%')
			continue;
		if (p[1] == 'n' || p[1] == 't')
			return 1;
		if (p[1])
			p++;
	}
	return 0;
}

const char *name_default(int periodic, const char *ext, char *out, size_t cap)
{
	snprintf(out, cap, "cprof-%%p-%%T-%%t%s.%s", periodic ? "-%n" : "", ext);
	return out;
}
