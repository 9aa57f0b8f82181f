/*
 * top.c — flat and cumulative values per function. Function ids are dense,
 * so the totals live in arrays indexed by id, and "already counted in this
 * sample" is a stamp per function rather than a set: O(frames) per sample.
 * A location without any line (an address nothing could name) is an entry
 * of its own after the functions, named by its address, so that nothing
 * that holds samples is left out of the table.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/sanitize.h"
#include "model/profile.h"
#include "writer/top.h"

struct fn_total {
	int64_t flat, cum;
	size_t stamp; /* sample number + 1 that last added to cum */
	uint64_t id;
};

static int by_flat(const void *a, const void *b)
{
	const struct fn_total *x = a, *y = b;

	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

size_t top_default_value(const struct profile *p)
{
	const struct profile_value_type *t = profile_sample_types(p);
	int64_t def = profile_default_sample_type(p);
	size_t i, n = profile_nvalues(p);

	for (i = 0; def && i < n; i++)
		if (t[i].type == def)
			return i;
	return n ? n - 1 : 0;
}

const char *top_short_name(const char *name, char *out, size_t cap)
{
	static const char *const quals[] = { " const", " volatile", " &&", " &", " noexcept" };
	size_t n = strlen(name), end, q;
	int depth = 0, cut;

	/* Trailing qualifiers of a member function, then its parameter list. */
	do {
		cut = 0;
		for (q = 0; q < sizeof(quals) / sizeof(quals[0]); q++) {
			size_t l = strlen(quals[q]);

			if (n > l && !strncmp(name + n - l, quals[q], l)) {
				n -= l;
				cut = 1;
			}
		}
	} while (cut);
	if (n < 2 || name[n - 1] != ')')
		return name;
	for (end = n; end-- > 0;) {
		depth += name[end] == ')' ? 1 : name[end] == '(' ? -1 : 0;
		if (depth == 0)
			break;
	}
	/* Unbalanced, or a name that is all parameter list: left whole. */
	if (depth != 0 || end == 0 || end + 1 > cap)
		return name;
	memcpy(out, name, end);
	out[end] = 0;
	return out;
}

static int put_value(struct buf *out, int64_t v, const char *unit)
{
	double d = (double)v;

	if (v == 0)
		return buf_printf(out, "%10s ", "0");
	if (!strcmp(unit, "nanoseconds")) {
		if (d >= 1e9 || d <= -1e9)
			return buf_printf(out, "%9.2fs ", d / 1e9);
		return buf_printf(out, "%8.2fms ", d / 1e6);
	}
	if (!strcmp(unit, "bytes")) {
		if (d >= 1e9 || d <= -1e9)
			return buf_printf(out, "%8.2fGB ", d / 1e9);
		if (d >= 1e6 || d <= -1e6)
			return buf_printf(out, "%8.2fMB ", d / 1e6);
		return buf_printf(out, "%8.2fkB ", d / 1e3);
	}
	return buf_printf(out, "%10" PRId64 " ", v);
}

int top_write(const struct profile *p, size_t value, size_t n, struct buf *out)
{
	char shortname[1024];
	const struct profile_sample *s;
	const struct profile_location *loc;
	const struct profile_function *fns;
	struct fn_total *t;
	const char *unit;
	size_t ns, nf, nl, i, j, k;
	int64_t total = 0, sum = 0;
	int r = 0;

	if (value >= profile_nvalues(p))
		return -1;
	unit = profile_string(p, profile_sample_types(p)[value].unit);
	s = profile_samples(p, &ns);
	fns = profile_functions(p, &nf);
	profile_locations(p, &nl);
	t = calloc(nf + nl + 1, sizeof(*t));
	if (!t)
		return -1;
	for (i = 0; i <= nf + nl; i++)
		t[i].id = i;
	for (i = 0; i < ns; i++) {
		int64_t v = s[i].values[value];

		total += v;
		for (j = 0; j < s[i].nlocations; j++) {
			loc = profile_location(p, s[i].location_ids[j]);
			for (k = 0; loc && k < (loc->nlines ? loc->nlines : 1); k++) {
				uint64_t f = loc->nlines ? loc->lines[k].function_id : nf + loc->id;

				if (f > nf + nl || (loc->nlines && f > nf))
					continue;
				if (j == 0 && k == 0)
					t[f].flat += v; /* the innermost frame */
				if (t[f].stamp != i + 1) {
					t[f].stamp = i + 1;
					t[f].cum += v;
				}
			}
		}
	}
	qsort(t + 1, nf + nl, sizeof(*t), by_flat);
	r = buf_printf(out, "      flat  flat%%   sum%%        cum   cum%%\n");
	for (i = 1; i <= nf + nl && i <= n && r == 0; i++) {
		if (!t[i].flat && !t[i].cum)
			break;
		sum += t[i].flat;
		r = put_value(out, t[i].flat, unit);
		if (r == 0)
			r = buf_printf(out, "%6.2f%% %6.2f%% ", total ? 100.0 * t[i].flat / total : 0,
				       total ? 100.0 * sum / total : 0);
		if (r == 0)
			r = put_value(out, t[i].cum, unit);
		if (r == 0)
			r = buf_printf(out, "%6.2f%%  ", total ? 100.0 * t[i].cum / total : 0);
		/* A name is the target's to choose: its control bytes are escaped (a terminal reads this). */
		if (r == 0 && t[i].id <= nf)
			r = sanitize_buf(out, top_short_name(profile_string(p, fns[t[i].id - 1].name),
							     shortname, sizeof(shortname)));
		if (r == 0 && t[i].id <= nf)
			r = buf_puts(out, "\n");
		else if (r == 0)
			r = buf_printf(out, "%#" PRIx64 "\n",
				       profile_location(p, t[i].id - nf)->address);
	}
	free(t);
	return r;
}
