/*
 * kallsyms.c — /proc/kallsyms as a sorted table (kallsyms.h). A line is
 * "ADDRESS TYPE NAME[\t[MODULE]]"; the module is left out of the name.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/kallsyms.h"

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset into text */
};

struct kallsyms {
	struct ksym *sym;
	size_t n;
	char *text;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Parse one line into addr, type and the name's span; 0 or -1. */
static int ksym_line(char *line, uint64_t *addr, char *type, char **name, size_t *len)
{
	char *end, *p;

	*addr = strtoull(line, &end, 16);
	if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
		return -1;
	*type = end[1];
	p = end + 3;
	*len = strcspn(p, " \t\n");
	*name = p;
	return *len ? 0 : -1;
}

static struct kallsyms *kallsyms_load(void)
{
	struct kallsyms *k = calloc(1, sizeof(*k));
	size_t cap = 0, tcap = 0, tlen = 0, len;
	char line[KALLSYMS_LINE], type, *name;
	uint64_t addr;
	int nonzero = 0;
	FILE *f;

	if (!k || !(f = fopen("/proc/kallsyms", "re"))) {
		free(k);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n') && !feof(f)) {
			int c; /* too long: skip the rest of it */

			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (ksym_line(line, &addr, &type, &name, &len) < 0)
			continue;
		nonzero |= addr != 0;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (k->n == KALLSYMS_MAX || tlen + len + 1 > KALLSYMS_TEXT)
			break;
		if (k->n == cap) {
			struct ksym *s = realloc(k->sym, (cap = cap ? cap * 2 : 65536) * sizeof(*s));

			if (!s)
				goto nomem;
			k->sym = s;
		}
		if (tlen + len + 1 > tcap) {
			char *t = realloc(k->text, tcap = (tcap ? tcap * 2 : 1u << 20) + len + 1);

			if (!t)
				goto nomem;
			k->text = t;
		}
		memcpy(k->text + tlen, name, len);
		k->text[tlen + len] = '\0';
		k->sym[k->n].addr = addr;
		k->sym[k->n++].name = (uint32_t)tlen;
		tlen += len + 1;
	}
	fclose(f);
	if (!nonzero || !k->n) {
		free(k->sym);
		free(k->text);
		free(k);
		errno = EPERM;
		return NULL;
	}
	qsort(k->sym, k->n, sizeof(*k->sym), ksym_cmp);
	return k;
nomem:
	fclose(f);
	free(k->sym);
	free(k->text);
	free(k);
	errno = ENOMEM;
	return NULL;
}

static struct kallsyms *kallsyms_table;
static int kallsyms_err;
static pthread_once_t kallsyms_once = PTHREAD_ONCE_INIT;

static void kallsyms_read_once(void)
{
	kallsyms_table = kallsyms_load();
	kallsyms_err = kallsyms_table ? 0 : errno;
}

const struct kallsyms *kallsyms_get(void)
{
	pthread_once(&kallsyms_once, kallsyms_read_once);
	if (!kallsyms_table)
		errno = kallsyms_err;
	return kallsyms_table;
}

int kallsyms_readable(void)
{
	char line[KALLSYMS_LINE], type, *name;
	uint64_t addr;
	size_t len;
	int i, seen = 0;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return 0;
	for (i = 0; i < KALLSYMS_PROBE && fgets(line, sizeof(line), f); i++)
		if (ksym_line(line, &addr, &type, &name, &len) == 0 && (seen = addr != 0))
			break;
	fclose(f);
	if (!seen)
		errno = EPERM;
	return seen;
}

const char *kallsyms_name(const struct kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n, mid;

	if (!k->n || addr < k->sym[0].addr)
		return NULL;
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (k->sym[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return k->text + k->sym[lo].name;
}
