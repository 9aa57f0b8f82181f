#ifndef CPROF_PPROF_H
#define CPROF_PPROF_H
/*
 * pprof — a profile in memory to and from pprof's wire format: the
 * profile.proto message encoded with protobuf-c, gzip-compressed with zlib.
 *
 * Invariants:
 *  - the encoded message has string_table[0] == "" and every id and string
 *    index it holds refers to an element it also holds;
 *  - output goes into a struct buf, so a failure leaves nothing half-written
 *    anywhere but in that buffer.
 */
#include <stddef.h>

#include "common/buf.h"

struct profile;

/* Encode p as a gzip-compressed profile.proto message appended to out. 0 or -1. */
int pprof_write(const struct profile *p, struct buf *out);

/*
 * Decode a profile (gzip-compressed or not) into a new struct profile, for
 * tests and tools; free it with profile_free(). Returns NULL on malformed
 * input.
 */
struct profile *pprof_read(const void *data, size_t len);

#endif
