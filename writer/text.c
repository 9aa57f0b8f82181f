/*
 * text.c — the two text renderings. Both walk the model's samples once to
 * sort them (by count, or by thread id) and then print each stack from the
 * leaf up; a location's inlined lines print innermost first, as a
 * debugger's backtrace does. Every string from the profile (names,
 * paths, the thread's name) goes through sanitize_buf(): a target chooses
 * them, and these forms are read on terminals.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/sanitize.h"
#include "model/profile.h"
#include "writer/text.h"

struct order {
	const struct profile *p;
	const struct profile_sample *s;
	int64_t key; /* count, or tid */
};

/* Most frequent first; ties by first location id, then position, for stable output. */
static int by_count(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	if (x->s->nlocations && y->s->nlocations &&
	    x->s->location_ids[0] != y->s->location_ids[0])
		return x->s->location_ids[0] < y->s->location_ids[0] ? -1 : 1;
	return x->s < y->s ? -1 : x->s > y->s;
}

static int by_tid(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->s < y->s ? -1 : x->s > y->s;
}

/* Samples in cmp order, keyed by the numeric label num_key, else by values[value]. */
static struct order *sorted(const struct profile *p, const char *num_key, size_t value,
			    int (*cmp)(const void *, const void *), size_t *n)
{
	const struct profile_sample *s = profile_samples(p, n);
	struct order *o = calloc(*n ? *n : 1, sizeof(*o));
	size_t i, j;

	if (!o)
		return NULL;
	for (i = 0; i < *n; i++) {
		o[i].p = p;
		o[i].s = &s[i];
		o[i].key = value < profile_nvalues(p) ? s[i].values[value] : 0;
		if (num_key) {
			o[i].key = INT64_MAX;
			for (j = 0; j < s[i].nlabels; j++)
				if (!strcmp(profile_string(p, s[i].labels[j].key), num_key) &&
				    !s[i].labels[j].str)
					o[i].key = s[i].labels[j].num;
		}
	}
	qsort(o, *n, sizeof(*o), cmp);
	return o;
}

static const char *label_str(const struct profile *p, const struct profile_sample *s,
			     const char *key)
{
	size_t j;

	for (j = 0; j < s->nlabels; j++)
		if (s->labels[j].str && !strcmp(profile_string(p, s->labels[j].key), key))
			return profile_string(p, s->labels[j].str);
	return NULL;
}

/* A numeric label's value, or -1 when the sample has none. */
static int64_t label_num(const struct profile *p, const struct profile_sample *s, const char *key)
{
	size_t j;

	for (j = 0; j < s->nlabels; j++)
		if (!s->labels[j].str && !strcmp(profile_string(p, s->labels[j].key), key))
			return s->labels[j].num;
	return -1;
}

static const struct profile *label_profile; /* for by_key; text output is single-threaded */

static int by_key(const void *a, const void *b)
{
	const struct profile_label *x = a, *y = b;

	return strcmp(profile_string(label_profile, x->key), profile_string(label_profile, y->key));
}

static int put_labels(struct buf *out, const struct profile *p, const struct profile_sample *s)
{
	struct profile_label l[PROFILE_MAX_LABELS];
	size_t i, n = s->nlabels < PROFILE_MAX_LABELS ? s->nlabels : PROFILE_MAX_LABELS;
	int r;

	if (!n)
		return 0;
	/* Sorted by key, as Go prints them. */
	memcpy(l, s->labels, n * sizeof(l[0]));
	label_profile = p;
	qsort(l, n, sizeof(l[0]), by_key);
	r = buf_printf(out, "# labels: {");
	for (i = 0; i < n && r == 0; i++) {
		r = buf_printf(out, "%s", i ? ", " : "");
		if (r == 0)
			r = buf_quote(out, profile_string(p, l[i].key), 0);
		if (r == 0)
			r = buf_append(out, ":", 1);
		if (r == 0 && l[i].str)
			r = buf_quote(out, profile_string(p, l[i].str), 0);
		else if (r == 0)
			r = buf_printf(out, "\"%" PRId64 "\"", l[i].num);
	}
	return r ? r : buf_printf(out, "}\n");
}

/* "name+0xOFF", or "name", or "" for a location's line i. */
static int put_function(struct buf *out, const struct profile *p,
			const struct profile_location *loc, size_t i)
{
	const struct profile_function *f = profile_function(p, loc->lines[i].function_id);
	const char *name = f ? profile_string(p, f->name) : "";

	int r = sanitize_buf(out, name);

	/* The offset belongs to the outermost function of the address; as %#x writes it. */
	if (r == 0 && i == loc->nlines - 1 && loc->symbol_offset >= 0)
		r = loc->symbol_offset ? buf_puts(out, "+0x") : buf_puts(out, "+");
	if (r == 0 && i == loc->nlines - 1 && loc->symbol_offset >= 0)
		r = buf_hex(out, (uint64_t)loc->symbol_offset, 0);
	return r;
}

/* "\tFILE:LINE" (path as given, or its last component when base) for a location's line i. */
static int put_source(struct buf *out, const struct profile *p, const struct profile_location *loc,
		      size_t i, const char *before, int base)
{
	const struct profile_function *f = profile_function(p, loc->lines[i].function_id);
	const char *file = f ? profile_string(p, f->filename) : "", *slash;

	if (!*file || loc->lines[i].line <= 0)
		return 0;
	slash = base ? strrchr(file, '/') : NULL;
	if (buf_puts(out, before) < 0 || sanitize_buf(out, slash ? slash + 1 : file) < 0)
		return -1;
	return buf_printf(out, ":%" PRId64, loc->lines[i].line);
}

/*
 * Whether loc is a kernel frame named without its address (a sleeping
 * thread's /proc stack, a call chain): Go's text form is keyed by
 * address, and has no place for it.
 */
static int kernel_nameonly(const struct profile *p, const struct profile_location *loc)
{
	const struct profile_mapping *m = profile_mapping(p, loc->mapping_id);

	return !loc->address && m && !strcmp(profile_string(p, m->filename), PROFILE_KERNEL_MAPPING);
}

/* " 0xADDR..." then the "#" frame lines and a blank line, as Go prints a record. */
static int put_record(struct buf *out, const struct profile *p, const struct profile_sample *s,
		      int with_labels)
{
	const struct profile_location *loc;
	size_t j, k;
	int r = 0, leaf = 1;

	for (j = 0; j < s->nlocations && r == 0; j++) {
		loc = profile_location(p, s->location_ids[j]);
		if (kernel_nameonly(p, loc))
			continue;
		r = buf_printf(out, " %#" PRIx64, loc->address + (leaf ? 0 : 1));
		leaf = 0;
	}
	if (r == 0)
		r = buf_printf(out, "\n");
	if (r == 0 && with_labels)
		r = put_labels(out, p, s);
	for (j = 0; j < s->nlocations && r == 0; j++) {
		loc = profile_location(p, s->location_ids[j]);
		if (kernel_nameonly(p, loc))
			continue;
		if (!loc->nlines)
			r = buf_printf(out, "#\t%#" PRIx64 "\n", loc->address);
		for (k = 0; k < loc->nlines && r == 0; k++) {
			r = buf_printf(out, "#\t%#" PRIx64 "\t", loc->address);
			if (r == 0)
				r = put_function(out, p, loc, k);
			if (r == 0)
				r = put_source(out, p, loc, k, "\t", 0);
			if (r == 0)
				r = buf_printf(out, "\n");
		}
	}
	return r ? r : buf_printf(out, "\n");
}

int text_write_count(const struct profile *p, const char *name, struct buf *out)
{
	struct order *o;
	int64_t total = 0;
	size_t n, i;
	int r;

	o = sorted(p, NULL, 0, by_count, &n);
	if (!o)
		return -1;
	for (i = 0; i < n; i++)
		total += o[i].key;
	r = buf_printf(out, "%s profile: total %" PRId64 "\n", name, total);
	for (i = 0; i < n && r == 0; i++) {
		r = buf_printf(out, "%" PRId64 " @", o[i].key);
		if (r == 0)
			r = put_record(out, p, o[i].s, 1);
	}
	free(o);
	return r;
}

/*
 * The profile's comments as "# " lines after the header (Go's parser of
 * the legacy forms skips them): what the profile covers (--inject). A
 * control byte in one is written as '?'.
 */
static int put_comments(struct buf *out, const struct profile *p)
{
	const int64_t *c;
	size_t n, i, k;
	int r = 0;

	c = profile_comments(p, &n);
	for (i = 0; i < n && r == 0; i++) {
		const char *s = profile_string(p, c[i]);

		r = buf_printf(out, "# ");
		for (k = 0; s[k] && r == 0; k++)
			r = buf_printf(out, "%c", (unsigned char)s[k] < 0x20 ? '?' : s[k]);
		if (r == 0)
			r = buf_printf(out, "\n");
	}
	return r;
}

int text_write_heap(const struct profile *p, int64_t rate, struct buf *out)
{
	int64_t t[4] = { 0, 0, 0, 0 };
	struct order *o;
	size_t n, i, k;
	int r;

	if (profile_nvalues(p) != 4)
		return -1;
	o = sorted(p, NULL, 3, by_count, &n); /* by inuse_space, as Go sorts */
	if (!o)
		return -1;
	for (i = 0; i < n; i++)
		for (k = 0; k < 4; k++)
			t[k] += o[i].s->values[k];
	r = buf_printf(out, "heap profile: %" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64
		       "] @ heap/%" PRId64 "\n", t[2], t[3], t[0], t[1], 2 * rate);
	if (r == 0)
		r = put_comments(out, p);
	for (i = 0; i < n && r == 0; i++) {
		const int64_t *v = o[i].s->values;

		r = buf_printf(out, "%" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "] @", v[2],
			       v[3], v[0], v[1]);
		if (r == 0)
			r = put_record(out, p, o[i].s, 0);
	}
	free(o);
	return r;
}

int text_write_contention(const struct profile *p, const char *name, struct buf *out)
{
	struct order *o;
	size_t n, i;
	int r;

	if (profile_nvalues(p) != 2)
		return -1;
	o = sorted(p, NULL, 1, by_count, &n); /* by delay, as Go sorts */
	if (!o)
		return -1;
	/* Delays are in nanoseconds: a "cycle" of a nanosecond, estimates already scaled. */
	r = buf_printf(out, "--- %s:\ncycles/second=1000000000\n", name);
	if (r == 0)
		r = put_comments(out, p);
	for (i = 0; i < n && r == 0; i++) {
		r = buf_printf(out, "%" PRId64 " %" PRId64 " @", o[i].s->values[1],
			       o[i].s->values[0]);
		if (r == 0)
			r = put_record(out, p, o[i].s, 0);
	}
	free(o);
	return r;
}

/* The program's own labels (include/cprof.h) of s, "    labels: k=v k=v", if any. */
static int put_program_labels(struct buf *out, const struct profile *p,
			      const struct profile_sample *s)
{
	const char *key;
	size_t i;
	int r = 0, first = 1;

	for (i = 0; i < s->nlabels && r == 0; i++) {
		key = profile_string(p, s->labels[i].key);
		if (!s->labels[i].str || profile_own_label(key) >= 0)
			continue;
		if (first)
			r = buf_printf(out, "    labels:");
		if (r == 0)
			r = buf_puts(out, " ");
		if (r == 0)
			r = sanitize_buf(out, key);
		if (r == 0)
			r = buf_puts(out, "=");
		if (r == 0)
			r = sanitize_buf(out, profile_string(p, s->labels[i].str));
		first = 0;
	}
	if (r == 0 && !first)
		r = buf_printf(out, "\n");
	return r;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/*
 * "    #N   0xADDR " as "    #%-3zu 0x%016" PRIx64 " " writes it ("[kernel]"
 * and blanks for a kernel frame without an address). The
 * dump's lines are put together from pieces, not printf'd: 2939 frames of
 * 201 threads cost 12.6 million instructions in 12000 vsnprintf calls,
 * half of a snapshot's main thread (callgrind).
 */
static int put_frame_head(struct buf *out, size_t frame, uint64_t address, int nameonly)
{
	char d[24];
	size_t n = 0, w;
	int r = buf_puts(out, "    #");

	do
		d[sizeof(d) - ++n] = (char)('0' + frame % 10);
	while ((frame /= 10) != 0 && n < sizeof(d));
	r = r ? r : buf_append(out, d + sizeof(d) - n, n);
	for (w = n; w < 3 && r == 0; w++)
		r = buf_append(out, " ", 1);
	/* A kernel frame named without its address (a sleeping thread's /proc stack). */
	if (nameonly)
		return r ? r : buf_puts(out, " [kernel]           ");
	r = r ? r : buf_puts(out, " 0x");
	r = r ? r : buf_hex(out, address, 16);
	return r ? r : buf_append(out, " ", 1);
}

int text_write_dump(const struct profile *p, const char *title, struct buf *out)
{
	const struct profile_location *loc;
	const struct profile_mapping *m;
	const char *name, *state, *sc, *proc;
	struct order *o;
	size_t n, i, j, k, frame;
	int64_t pid;
	int r;

	o = sorted(p, "tid", 0, by_tid, &n);
	if (!o)
		return -1;
	r = sanitize_buf(out, title);
	r = r ? r : buf_puts(out, "\n");
	for (i = 0; i < n && r == 0; i++) {
		const struct profile_sample *s = o[i].s;

		name = label_str(p, s, "thread");
		state = label_str(p, s, "state");
		sc = label_str(p, s, "syscall");
		r = buf_printf(out, "\nthread %" PRId64 " \"", o[i].key);
		r = r ? r : sanitize_buf(out, name ? name : "?");
		r = r ? r : buf_puts(out, "\" ");
		r = r ? r : sanitize_buf(out, state ? state : "");
		r = r ? r : buf_puts(out, sc ? " in " : "");
		r = r ? r : sanitize_buf(out, sc ? sc : "");
		/* A process family's dump (--children): which process the thread is in. */
		pid = label_num(p, s, "pid");
		proc = label_str(p, s, "process");
		if (r == 0 && pid >= 0) {
			r = buf_printf(out, ", process %" PRId64 " \"", pid);
			r = r ? r : sanitize_buf(out, proc ? proc : "?");
			r = r ? r : buf_puts(out, "\"");
		}
		r = r ? r : buf_puts(out, "\n");
		if (r == 0)
			r = put_program_labels(out, p, s);
		if (r == 0 && !s->nlocations)
			r = buf_printf(out, "    (no stack)\n");
		for (j = 0, frame = 0; j < s->nlocations && r == 0; j++) {
			loc = profile_location(p, s->location_ids[j]);
			m = profile_mapping(p, loc->mapping_id);
			for (k = 0; k < (loc->nlines ? loc->nlines : 1) && r == 0; k++, frame++) {
				r = put_frame_head(out, frame, loc->address, kernel_nameonly(p, loc));
				if (r == 0 && loc->nlines)
					r = put_function(out, p, loc, k);
				else if (r == 0)
					r = buf_puts(out, m ? "[no symbol]" : "[anonymous code]");
				/* Frames folded into this address by inlining: all but its last line. */
				if (r == 0 && loc->nlines && k + 1 < loc->nlines)
					r = buf_puts(out, " (inlined)");
				if (r == 0 && loc->nlines)
					r = put_source(out, p, loc, k, " at ", 1);
				if (r == 0 && m) {
					r = buf_puts(out, " (");
					r = r ? r : sanitize_buf(out, basename_of(profile_string(p, m->filename)));
					r = r ? r : buf_puts(out, ")");
				}
				if (r == 0)
					r = buf_puts(out, "\n");
			}
		}
	}
	free(o);
	return r;
}
