/*
 * err.c — error, warning and note lines on stderr. Each message is built in
 * one buffer and written with a single write(2) so that lines from two
 * threads never interleave mid-line.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"

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

static void emit(const char *kind, const char *fmt, va_list ap, int errnum)
{
	char line[1024];
	size_t n;
	int r;

	r = snprintf(line, sizeof(line), "%s: %s", prog, kind);
	n = r < 0 ? 0 : (size_t)r < sizeof(line) ? (size_t)r : sizeof(line) - 1;
	r = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (r > 0)
		n += (size_t)r < sizeof(line) - n ? (size_t)r : sizeof(line) - n - 1;
	if (errnum) {
		r = snprintf(line + n, sizeof(line) - n, ": %s", strerror(errnum));
		if (r > 0)
			n += (size_t)r < sizeof(line) - n ? (size_t)r : sizeof(line) - n - 1;
	}
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
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
