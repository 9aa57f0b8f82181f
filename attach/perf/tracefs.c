/*
 * tracefs.c — tracepoint ids and field offsets from the host's tracefs
 * (tracefs.h). A format file's field lines read
 *	field:pid_t next_pid;	offset:56;	size:4;	signed:1;
 * and only the field's own name (the word before ';', after any type
 * words and before any array brackets) matches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/perf/tracefs.h"
#include "common/proc.h"

static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

/* Read sys/name/file from the first tracefs that has it. Bytes read, or -1 with errno. */
static ssize_t tracefs_read(const char *sys, const char *name, const char *file, char *buf,
			    size_t cap)
{
	char path[256];
	ssize_t n = -1;
	int e = ENOENT;
	size_t i;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/%s/%s/%s", roots[i], sys, name, file);
		if ((n = proc_read(path, buf, cap)) >= 0)
			return n;
		if (errno != ENOENT)
			e = errno;
	}
	errno = e;
	return -1;
}

uint64_t tracefs_event_id(const char *sys, const char *name)
{
	char buf[32], *end;
	unsigned long long id;

	if (tracefs_read(sys, name, "id", buf, sizeof(buf)) <= 0)
		return 0;
	id = strtoull(buf, &end, 10);
	if (end == buf || id == 0) {
		errno = EINVAL;
		return 0;
	}
	return id;
}

/* The number after key (e.g. "offset:") in line [p, end), or -1. */
static long field_number(const char *p, const char *end, const char *key)
{
	size_t k = strlen(key);
	char *stop;
	long v;

	for (; p + k <= end; p++)
		if (!memcmp(p, key, k)) {
			v = strtol(p + k, &stop, 10);
			return stop == p + k || v < 0 || v > 65535 ? -1 : v;
		}
	return -1;
}

int tracefs_parse_field(const char *format, const char *field, struct tracefs_field *f)
{
	size_t flen = strlen(field);
	const char *line = format, *end, *decl, *semi, *name;
	long off, size;

	for (; *line; line = *end ? end + 1 : end) {
		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		decl = strstr(line, "field:");
		if (!decl || decl >= end || !(semi = memchr(decl, ';', (size_t)(end - decl))))
			continue;
		/* The declaration's last word, before any "[N]": its name. */
		name = semi;
		while (name > decl && name[-1] == ']')
			while (name > decl && *--name != '[')
				;
		if (name == decl)
			continue;
		if ((size_t)(name - decl) < flen || memcmp(name - flen, field, flen) ||
		    (name - flen > decl && (name[-flen - 1] != ' ' && name[-flen - 1] != '\t' &&
					    name[-flen - 1] != '*')))
			continue;
		off = field_number(semi, end, "offset:");
		size = field_number(semi, end, "size:");
		if (off < 0 || size <= 0)
			return -1;
		f->offset = (uint32_t)off;
		f->size = (uint32_t)size;
		return 0;
	}
	return -1;
}

int tracefs_field(const char *sys, const char *name, const char *field,
		  struct tracefs_field *f)
{
	char buf[8192];

	if (tracefs_read(sys, name, "format", buf, sizeof(buf)) <= 0)
		return -1;
	return tracefs_parse_field(buf, field, f);
}
