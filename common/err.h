#ifndef CPROF_ERR_H
#define CPROF_ERR_H
/*
 * err — the one way cprof reports a problem to a person.
 *
 * Invariants:
 *  - a message is exactly one line on stderr, "PROG: message", lowercase and
 *    without a trailing period, naming the object and the cause;
 *  - the message's control bytes (a newline, ESC...) are escaped as \xNN
 *    (common/sanitize.h): names and paths a target chose may be printed
 *    as they are;
 *  - error() and error_errno() return -1 so that a failing function can end
 *    with "return error(...)";
 *  - code that parses untrusted input (target memory, /proc text, ELF files)
 *    does not call these: it returns a failure and its caller decides whether
 *    a person needs to hear about it.
 */
#include <stdarg.h>

/* Set the program name that prefixes every message (default "cprof"). */
void err_set_prog(const char *name);

/* Suppress warnings (errors are still printed); for -q. */
void err_set_quiet(int quiet);

/* Print "PROG: message" and return -1. */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Like error(), appending ": " and strerror(errno) as it was on entry. */
int error_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "PROG: warning: message" unless quiet. */
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "PROG: message" unless quiet; for informational lines (no prefix). */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
