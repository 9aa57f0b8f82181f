#ifndef CPROF_GZIP_H
#define CPROF_GZIP_H
/*
 * gzip — whole-buffer gzip compression and decompression with zlib.
 * Invariant: on failure nothing is appended to out.
 */
#include <stddef.h>

#include "common/buf.h"

/* Append the gzip form of in[0..n) to out. 0 or -1. */
int gzip_compress(const void *in, size_t n, struct buf *out);

/* Append the decompressed form of a gzip stream to out (bounded by out's limit). 0 or -1. */
int gzip_decompress(const void *in, size_t n, struct buf *out);

/* Whether data starts with the gzip magic bytes. */
int gzip_is_gzip(const void *data, size_t n);

#endif
