/*
 * label.c — the name a pushed profile carries, APP{k=v,...}, in
 * Pyroscope's label-set syntax (api/model/labelset: the application
 * [A-Za-z0-9_.-/], keys [A-Za-z0-9_.], values ending at ',' or '}' with no
 * escaping). What the user gives is checked and refused when it breaks
 * the syntax; what cprof finds (the executable's name, the host name) is
 * cleaned, since refusing it would leave the user nothing to fix.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/capture/target.h"
#include "attach/push/label.h"
#include "attach/push/push.h"
#include "common/buf.h"
#include "common/err.h"

int push_label_check(const char *kv)
{
	const char *eq = strchr(kv, '='), *s;

	if (!eq || eq == kv)
		return error("invalid label \"%s\": expected KEY=VALUE", kv);
	if (eq - kv >= 2 && kv[0] == '_' && kv[1] == '_')
		return error("invalid label \"%s\": keys starting \"__\" are reserved by Pyroscope", kv);
	for (s = kv; s < eq; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '.'))
			return error("invalid label \"%s\": a key may hold letters, digits, '_' and '.'", kv);
	if (!eq[1])
		return error("invalid label \"%s\": empty value", kv);
	for (s = eq + 1; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || strchr(",{}\"", *s))
			return error("invalid label \"%s\": a value may not hold ',', '{', '}', '\"' "
				     "or control characters (Pyroscope's name has no escaping)",
				     kv);
	return 0;
}

/* Characters Pyroscope takes in an application name ([A-Za-z0-9_.-/]); others become '_'. */
static void app_clean(char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("_.-/", *s)))
			*s = '_';
}

/* Characters a label value may not hold (push_label_check) become '_'. */
static void value_clean(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || strchr(",{}\"", *s))
			*s = '_';
}

/* Is there a --label with this key? */
static int has_label(const struct push_options *po, const char *key)
{
	size_t n = strlen(key);
	unsigned i;

	for (i = 0; i < po->nlabels; i++)
		if (!strncmp(po->labels[i], key, n) && po->labels[i][n] == '=')
			return 1;
	return 0;
}

int push_name_build(const struct push_options *po, const struct target *t, char *out, size_t cap)
{
	char app[256], host[256], exe[64], path[PATH_MAX];
	const char *base = path;
	struct buf b;
	ssize_t n;
	unsigned i;
	int r = 0;
	const char *sep = "";

	if (po->app) {
		if (!*po->app || strlen(po->app) >= sizeof(app))
			return error("invalid application name \"%s\"", po->app);
		memcpy(app, po->app, strlen(po->app) + 1);
		app_clean(app);
		if (strcmp(app, po->app) != 0)
			return error("invalid application name \"%s\": Pyroscope takes letters, digits, "
				     "'_', '.', '-' and '/'",
				     po->app);
	} else {
		/*
		 * The executable's name where comm is its (15-character) start;
		 * else comm: Debian's redis-server is a link to redis-check-rdb,
		 * which /proc/PID/exe names, while comm says redis-server.
		 */
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)t->pid);
		n = readlink(exe, path, sizeof(path) - 1);
		if (n > 0) {
			path[n] = 0;
			if (n > 10 && !strcmp(path + n - 10, " (deleted)"))
				path[n - 10] = 0;
			base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		}
		if (n > 0 && t->comm[0] && !strncmp(base, t->comm, strlen(t->comm)))
			snprintf(app, sizeof(app), "%.200s", base);
		else
			snprintf(app, sizeof(app), "%.200s", t->comm[0] ? t->comm : n > 0 ? base : "");
		if (!app[0])
			snprintf(app, sizeof(app), "unknown");
		app_clean(app);
	}
	if (gethostname(host, sizeof(host)) < 0 || !host[0])
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = 0;
	value_clean(host);
	buf_init(&b, cap - 1);
	r |= buf_printf(&b, "%s{", app);
	for (i = 0; i < po->nlabels; i++, sep = ",")
		r |= buf_printf(&b, "%s%s", sep, po->labels[i]);
	if (!has_label(po, "hostname")) {
		r |= buf_printf(&b, "%shostname=%s", sep, host);
		sep = ",";
	}
	if (!has_label(po, "pid"))
		r |= buf_printf(&b, "%spid=%d", sep, (int)t->pid);
	r |= buf_printf(&b, "}");
	if (r == 0)
		memcpy(out, b.data, b.len + 1);
	buf_release(&b);
	if (r)
		return error("application name and labels too long (more than %zu bytes)", cap - 1);
	return 0;
}
