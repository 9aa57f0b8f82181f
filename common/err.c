/*
 * err.c — error, warning and note lines on stderr. Each message is built in
 * one buffer and written with a single write(2) so that lines from two
 * threads never interleave mid-line. A message names things a target
 * chose (paths, thread names, symbols), so its control bytes are escaped
 * (common/sanitize.h): the line stays one line and no escape sequence
 * reaches the terminal.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/sanitize.h"

static const char *prog = "cprof";
static int quiet;

void err_set_prog(const char *name)
{
	prog = name;
}

void err_set_quiet(int q)
{
	quiet = q;
}

/* Append formatted text at line[*n], truncating at the buffer's end. */
static void __attribute__((format(printf, 4, 5)))
put(char *line, size_t cap, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (*n >= cap - 1)
		return;
	va_start(ap, fmt);
	r = vsnprintf(line + *n, cap - *n, fmt, ap);
	va_end(ap);
	if (r > 0)
		*n += (size_t)r < cap - *n ? (size_t)r : cap - *n - 1;
}

static void emit(const char *kind, const char *fmt, va_list ap, int errnum)
{
	char line[1024], msg[1024], clean[1024];
	size_t n = 0;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	sanitize_str(clean, sizeof(clean), msg);
	put(line, sizeof(line) - 1, &n, "%s: %s%s", prog, kind, clean);
	if (errnum)
		put(line, sizeof(line) - 1, &n, ": %s", strerror(errnum));
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0) {
		/* Nowhere left to report to. */
	}
}

int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("", fmt, ap, 0);
	va_end(ap);
	return -1;
}

int error_errno(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	emit("", fmt, ap, e);
	va_end(ap);
	errno = e;
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	emit("warning: ", fmt, ap, 0);
	va_end(ap);
}

void note(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	emit("", fmt, ap, 0);
	va_end(ap);
}
