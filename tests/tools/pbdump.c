/*
 * pbdump.c — print a pprof file as stable, line-oriented text for shell
 * tests, by way of pprof_read(), so a test checks what the writer encoded
 * and not what the model held. The output, in this order:
 *
 *   sample_type TYPE UNIT             one per sample type
 *   period_type TYPE UNIT
 *   period N
 *   time_nanos N
 *   duration_nanos N
 *   default_sample_type NAME          only when set
 *   comment TEXT                      one per comment
 *   mapping ID START END OFFSET FILE BUILDID has_functions=0|1
 *   sample V1,V2,... labels K=V;K=N stack ROOT;...;LEAF
 *
 * Addresses are 0x-prefixed hex; an empty string prints as "-", as do an
 * empty label set and an empty stack. Labels are sorted by key, then value.
 * A frame is the function name of each line of a location, the caller
 * first, so inlined code reads root to leaf like the rest of the stack; a
 * location without lines (or a nameless function) prints as 0xADDR.
 * With -f only folded lines "ROOT;...;LEAF VALUE" are printed, with the
 * last sample value, one per sample in the file's order (not merged).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/err.h"
#include "model/profile.h"
#include "writer/pprof.h"

#define PBDUMP_MAX_FILE ((size_t)1 << 30)
#define PBDUMP_MAX_LINE ((size_t)64 << 20)

static const char *pbdump_str(const struct profile *p, int64_t i)
{
	const char *s = profile_string(p, i);

	return *s ? s : "-";
}

static int pbdump_read(const char *path, struct buf *b)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return error_errno("cannot read \"%s\"", path);
	if (buf_read_fd(b, fd) < 0)
		goto err;
	close(fd);
	return 0;
err:
	error_errno("cannot read \"%s\"", path);
	close(fd);
	return -1;
}

/* Append the stack of s, root first, to line. */
static int pbdump_stack(const struct profile *p, const struct profile_sample *s, struct buf *line)
{
	int first = 1;

	if (!s->nlocations)
		return buf_append(line, "-", 1);
	for (size_t i = s->nlocations; i-- > 0;) {
		const struct profile_location *l = profile_location(p, s->location_ids[i]);
		size_t j = l->nlines;

		do {
			const struct profile_function *f =
				j ? profile_function(p, l->lines[j - 1].function_id) : NULL;
			const char *name = f ? profile_string(p, f->name) : "";
			int r;

			if (*name)
				r = buf_printf(line, "%s%s", first ? "" : ";", name);
			else
				r = buf_printf(line, "%s0x%" PRIx64, first ? "" : ";", l->address);
			if (r < 0)
				return -1;
			first = 0;
		} while (j && --j);
	}
	return 0;
}

static int pbdump_label_cmp(const struct profile *p, const struct profile_label *a,
			    const struct profile_label *b)
{
	int c = strcmp(profile_string(p, a->key), profile_string(p, b->key));

	if (c)
		return c;
	if (a->str != b->str)
		return strcmp(profile_string(p, a->str), profile_string(p, b->str));
	return a->num < b->num ? -1 : a->num > b->num;
}

static int pbdump_labels(const struct profile *p, const struct profile_sample *s, struct buf *line)
{
	struct profile_label l[PROFILE_MAX_LABELS];
	size_t n = s->nlabels < PROFILE_MAX_LABELS ? s->nlabels : PROFILE_MAX_LABELS;

	if (!n)
		return buf_append(line, "-", 1);
	for (size_t i = 0; i < n; i++) {
		size_t j = i;

		while (j > 0 && pbdump_label_cmp(p, &l[j - 1], &s->labels[i]) > 0) {
			l[j] = l[j - 1];
			j--;
		}
		l[j] = s->labels[i];
	}
	for (size_t i = 0; i < n; i++) {
		const char *sep = i ? ";" : "";
		int r;

		if (l[i].str)
			r = buf_printf(line, "%s%s=%s", sep, profile_string(p, l[i].key),
				       profile_string(p, l[i].str));
		else
			r = buf_printf(line, "%s%s=%" PRId64, sep, profile_string(p, l[i].key),
				       l[i].num);
		if (r < 0)
			return -1;
	}
	return 0;
}

static void pbdump_header(const struct profile *p)
{
	const struct profile_value_type *t = profile_sample_types(p);
	struct profile_value_type pt = profile_period_type(p);
	const struct profile_mapping *m;
	const int64_t *c;
	size_t n;

	for (size_t i = 0; i < profile_nvalues(p); i++)
		printf("sample_type %s %s\n", pbdump_str(p, t[i].type), pbdump_str(p, t[i].unit));
	printf("period_type %s %s\n", pbdump_str(p, pt.type), pbdump_str(p, pt.unit));
	printf("period %" PRId64 "\n", profile_period(p));
	printf("time_nanos %" PRId64 "\n", profile_time_nanos(p));
	printf("duration_nanos %" PRId64 "\n", profile_duration_nanos(p));
	if (profile_default_sample_type(p))
		printf("default_sample_type %s\n", pbdump_str(p, profile_default_sample_type(p)));
	c = profile_comments(p, &n);
	for (size_t i = 0; i < n; i++)
		printf("comment %s\n", profile_string(p, c[i]));
	m = profile_mappings(p, &n);
	for (size_t i = 0; i < n; i++)
		printf("mapping %" PRIu64 " 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64
		       " %s %s has_functions=%d\n",
		       m[i].id, m[i].start, m[i].limit, m[i].offset, pbdump_str(p, m[i].filename),
		       pbdump_str(p, m[i].build_id), m[i].has_functions);
}

static int pbdump_samples(const struct profile *p, int folded)
{
	size_t n, nv = profile_nvalues(p);
	const struct profile_sample *s = profile_samples(p, &n);
	struct buf line;

	buf_init(&line, PBDUMP_MAX_LINE);
	for (size_t i = 0; i < n; i++) {
		line.len = 0;
		if (folded) {
			if (pbdump_stack(p, &s[i], &line) < 0 ||
			    buf_printf(&line, " %" PRId64 "\n", nv ? s[i].values[nv - 1] : 0) < 0)
				goto err;
		} else {
			if (buf_printf(&line, "sample ") < 0)
				goto err;
			for (size_t v = 0; v < nv; v++)
				if (buf_printf(&line, "%s%" PRId64, v ? "," : "", s[i].values[v]) < 0)
					goto err;
			if (buf_printf(&line, " labels ") < 0 || pbdump_labels(p, &s[i], &line) < 0 ||
			    buf_printf(&line, " stack ") < 0 || pbdump_stack(p, &s[i], &line) < 0 ||
			    buf_append(&line, "\n", 1) < 0)
				goto err;
		}
		fwrite(line.data, 1, line.len, stdout);
	}
	buf_release(&line);
	return 0;
err:
	buf_release(&line);
	return error_errno("cannot print the samples");
}

int main(int argc, char **argv)
{
	struct profile *p = NULL;
	struct buf file;
	int folded = 0, rc = 1;
	const char *path;

	err_set_prog("pbdump");
	if (argc == 3 && strcmp(argv[1], "-f") == 0)
		folded = 1;
	if (argc != 2 + folded) {
		fprintf(stderr, "usage: pbdump [-f] FILE\n");
		return 2;
	}
	path = argv[1 + folded];
	buf_init(&file, PBDUMP_MAX_FILE);
	if (pbdump_read(path, &file) < 0)
		goto err;
	p = pprof_read(file.data, file.len);
	if (!p) {
		error("cannot read \"%s\": not a valid profile", path);
		goto err;
	}
	if (!folded)
		pbdump_header(p);
	if (pbdump_samples(p, folded) < 0)
		goto err;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		error_errno("cannot write to standard output");
		goto err;
	}
	rc = 0;
err:
	profile_free(p);
	buf_release(&file);
	return rc;
}
