#ifndef CPROF_BUF_H
#define CPROF_BUF_H
/*
 * buf — a growable byte buffer with a hard cap.
 *
 * Invariants:
 *  - len <= cap <= limit; data is NULL only while cap is 0;
 *  - data[len] is always a NUL byte once anything was appended, so text can
 *    be used as a C string (the NUL is not counted in len);
 *  - an append that would pass the limit fails as a whole, appends nothing
 *    and returns -1 (errno EFBIG; ENOMEM when memory runs out).
 */
#include <stddef.h>
#include <stdint.h>

struct buf {
	unsigned char *data;
	size_t len;
	size_t cap;
	size_t limit;
};

/* Start an empty buffer that may grow to at most limit bytes. */
void buf_init(struct buf *b, size_t limit);

/* Free the memory; the buffer is empty and reusable with the same limit. */
void buf_release(struct buf *b);

/* Make room for n more bytes; 0 or -1. */
int buf_reserve(struct buf *b, size_t n);

/* Append n bytes; 0 or -1. */
int buf_append(struct buf *b, const void *p, size_t n);

/*
 * Append s in double quotes with '"' and '\\' escaped and control bytes
 * written as \\xNN (Go's %q for plain text) or, with json, \\u00NN. 0 or -1.
 */
int buf_quote(struct buf *b, const char *s, int json);

/*
 * Append everything readable from fd until end of file. 0, or -1 with
 * errno (EFBIG when the file is longer than the buffer's limit allows).
 */
int buf_read_fd(struct buf *b, int fd);

/* Cut the contents back to len bytes (len <= b->len), keeping the NUL after them. */
void buf_truncate(struct buf *b, size_t len);

/* Append the string s (without its NUL); 0 or -1. */
int buf_puts(struct buf *b, const char *s);

/*
 * Append v in lowercase hexadecimal, at least width digits (zero-padded;
 * at most 16), without a prefix: what "%0*" PRIx64 writes, for writers
 * that print thousands of addresses (printf's cost per call is ~900
 * instructions). 0 or -1.
 */
int buf_hex(struct buf *b, uint64_t v, unsigned width);

/* Append formatted text; 0 or -1. */
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
