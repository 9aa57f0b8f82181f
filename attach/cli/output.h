#ifndef CPROF_OUTPUT_H
#define CPROF_OUTPUT_H
/*
 * output — writing one captured profile in the chosen format to its file,
 * atomically (writer/outfile.h), and telling the user about it.
 *
 * Invariants:
 *  - the output file is opened before the capture starts, so an unwritable
 *    path fails before the target is touched; it appears under its final
 *    name only when complete;
 *  - what a format writes, and its file extension, are the format table's
 *    (kinds/formats.h); nothing here lists formats.
 */
#include "attach/source/result.h"
#include "writer/outfile.h"

struct options;
struct target;
struct profile;
struct buf;

/*
 * Encode prof as o->format and commit it to out (opened by the caller;
 * NULL: no local file, as with --push alone). With keep, the encoded
 * bytes are handed over in *keep on success (the caller releases it).
 * Returns an EXIT_* code; on failure out is aborted and the reason printed.
 */
int output_write(const struct options *o, const struct target *t, const struct capture_report *rep,
		 const struct profile *prof, struct outfile *out, struct buf *keep);

#endif
