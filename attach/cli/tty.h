#ifndef CPROF_TTY_H
#define CPROF_TTY_H
/*
 * tty — the terminal of `cprof-attach top`, in plain ANSI and termios:
 * raw keys (no echo, no line buffering, signals still from Ctrl-C), the
 * alternate screen and a hidden cursor while the view is up, and the
 * terminal as it was on every way out.
 *
 * Invariants:
 *  - tty_restore() is idempotent and async-signal-safe (tcsetattr and
 *    write only): it runs from atexit and from the watchdog's last act;
 *  - ISIG stays on: Ctrl-C raises SIGINT, which the watchdog takes as a
 *    stop (common/watchdog.h); Ctrl-Z is off (tty.c says why);
 *  - while the view is up, stderr is held (a sealed memfd of a fixed
 *    64 KiB) and given back, with what was written to it, by
 *    tty_restore(): no message is drawn over the screen or lost with the
 *    alternate screen;
 *  - nothing here prints what a target chose: callers sanitize.
 */
#include <stddef.h>

/* Take the terminal on fd (stdout's; keys from stdin): raw keys, alternate screen. 0 or -1. */
int tty_begin(void);

/* The terminal as tty_begin() found it (no-op when not taken or already given back). */
void tty_restore(void);

/* The terminal's size; 80x24 when it cannot be read. */
void tty_size(unsigned *rows, unsigned *cols);

/* Write n bytes to stdout whole (retrying short writes and EINTR). 0 or -1. */
int tty_write(const char *s, size_t n);

#endif
