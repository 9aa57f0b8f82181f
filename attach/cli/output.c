/*
 * output.c — the one path from a profile in memory to a file: encode in
 * the chosen format (kinds/formats.c) into a capped buffer, write, commit.
 */
#include <stdio.h>
#include <string.h>

#include "attach/cli/options.h"
#include "attach/cli/output.h"
#include "attach/capture/target.h"
#include "attach/kinds/kinds.h"
#include "common/err.h"
#include "model/profile.h"

#define PROFILE_MAX_BYTES (1u << 30)

int output_write(const struct options *o, const struct target *t, const struct capture_report *rep,
		 const struct profile *prof, struct outfile *out, struct buf *keep)
{
	struct write_info wi = { t->pid, t->comm, o->kind->name, o->kind->text,
				 rep->start_real_ns, rep->samples, o->frame_lines, o->group_by };
	struct buf b;
	int code = EXIT_OK;

	buf_init(&b, PROFILE_MAX_BYTES);
	if (o->format->write(prof, &wi, &b) < 0) {
		error("cannot encode the profile: out of memory or larger than %u MiB",
		      PROFILE_MAX_BYTES >> 20);
		if (out)
			outfile_abort(out);
		code = EXIT_INTERNAL;
	} else if (out && (outfile_write(out, b.data, b.len) < 0 || outfile_commit(out) < 0)) {
		code = EXIT_OUTPUT;
	}
	if (keep && code == EXIT_OK) {
		*keep = b; /* the encoded profile, for --push */
		return code;
	}
	buf_release(&b);
	return code;
}
