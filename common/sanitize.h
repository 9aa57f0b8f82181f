#ifndef CPROF_SANITIZE_H
#define CPROF_SANITIZE_H
/*
 * sanitize — text a target chose (thread names, function names, paths,
 * label values), made safe to show on a terminal: every control byte is
 * written as \xNN, so that an escape sequence in a name is shown, never
 * obeyed by root's terminal.
 *
 * Invariants:
 *  - escaped are the C0 controls (bytes 0x01..0x1f, newline and tab
 *    included: a name is one field of one line), DEL (0x7f) and the C1
 *    controls as UTF-8 encodes them (0xc2 0x80..0x9f, both bytes), which
 *    UTF-8 terminals obey like their 7-bit forms; every other byte, valid
 *    UTF-8 or not, is copied, so names in any language print as they are;
 *  - a backslash is copied: "\x1b" in a name and an escaped ESC print
 *    alike, which is a matter of reading, not of safety;
 *  - sanitize_str() never cuts an escape in half (what does not fit is
 *    left out whole) and always ends out with a NUL.
 */
#include <stddef.h>

struct buf;

/* How many bytes at p[0..n) form a control to escape: 0, 1 or 2. */
size_t sanitize_ctl(const unsigned char *p, size_t n);

/* Append s with its controls escaped. 0, or -1 (the buffer's limit, memory: a part may be in). */
int sanitize_buf(struct buf *b, const char *s);

/* s with its controls escaped into out[cap], cut where it does not fit. The length written. */
size_t sanitize_str(char *out, size_t cap, const char *s);

#endif
