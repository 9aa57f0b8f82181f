/*
 * tty.c — raw keys and the alternate screen for the live view, with the
 * terminal given back on every exit path: atexit, and the watchdog's
 * end (watchdog_on_end), which _exits past atexit. Ctrl-Z is off while
 * the view is up: a tracer suspended in the middle of a ptrace capture
 * would hold the target's threads stopped until it is continued.
 * Plain ANSI (the sequences every terminal emulator since the VT100
 * reads, tmux and screen too) and termios rather than ncurses: no new
 * library to build against or install for one screen of text.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "attach/cli/tty.h"
#include "common/err.h"
#include "common/watchdog.h"

/* Alternate screen, cursor hidden, then cleared; and back. */
#define TTY_ENTER "\033[?1049h\033[?25l\033[H\033[2J"
#define TTY_LEAVE "\033[?25h\033[?1049l"

#define TTY_HELD_MAX (64 << 10) /* bytes of messages held while the screen is up */

static struct termios tty_saved;
static volatile sig_atomic_t tty_taken;
static int tty_stderr = -1; /* the real stderr while messages are held, else -1 */
static int tty_held = -1;   /* the memfd they are held in */

int tty_write(const char *s, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(STDOUT_FILENO, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* stderr back, and what was held on it copied there. */
static void tty_give_stderr(void)
{
	char b[4096];
	off_t held, at = 0;
	ssize_t n;

	if (tty_stderr < 0)
		return;
	/* The memfd shares its offset with the stderr it stood for: the bytes written. */
	held = lseek(tty_held, 0, SEEK_CUR);
	dup2(tty_stderr, STDERR_FILENO);
	close(tty_stderr);
	tty_stderr = -1;
	while (at < held) {
		size_t want = (size_t)(held - at) < sizeof(b) ? (size_t)(held - at) : sizeof(b);

		if ((n = pread(tty_held, b, want, at)) <= 0)
			break;
		(void)!write(STDERR_FILENO, b, (size_t)n);
		at += n;
	}
	close(tty_held);
	tty_held = -1;
}

void tty_restore(void)
{
	int saved = errno;

	if (!tty_taken)
		return;
	tty_taken = 0;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &tty_saved);
	(void)tty_write(TTY_LEAVE, sizeof(TTY_LEAVE) - 1);
	tty_give_stderr();
	errno = saved;
}

/*
 * Hold what is written to stderr while the screen is up (a message would
 * land in the middle of it, and vanish with the alternate screen): the
 * terminal's own stderr gets it when the view ends. Best effort: without
 * a memfd, messages go to the screen.
 */
static void tty_hold_stderr(void)
{
	if (tty_stderr >= 0 || !isatty(STDERR_FILENO))
		return;
	tty_held = memfd_create("cprof-top-stderr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (tty_held < 0)
		return;
	/* Its hard cap: a fixed size, sealed; a write past it fails (and is lost). */
	if (ftruncate(tty_held, TTY_HELD_MAX) < 0 ||
	    fcntl(tty_held, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK) < 0) {
		close(tty_held);
		tty_held = -1;
		return;
	}
	tty_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (tty_stderr < 0 || dup2(tty_held, STDERR_FILENO) < 0) {
		if (tty_stderr >= 0)
			close(tty_stderr);
		close(tty_held);
		tty_stderr = tty_held = -1;
	}
}

/* Raw keys and the alternate screen, from the saved state. */
static int tty_take(void)
{
	struct termios raw = tty_saved;

	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | IEXTEN);
	raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	/* No Ctrl-Z: a tracer suspended mid-capture would hold the target's threads stopped. */
	raw.c_cc[VSUSP] = _POSIX_VDISABLE;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) < 0)
		return -1;
	tty_taken = 1;
	tty_hold_stderr();
	return tty_write(TTY_ENTER, sizeof(TTY_ENTER) - 1);
}

int tty_begin(void)
{
	static int once;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		return error("top: the live view needs a terminal on standard input and output");
	if (tcgetattr(STDIN_FILENO, &tty_saved) < 0)
		return error_errno("top: cannot read the terminal's settings");
	if (!once++) {
		atexit(tty_restore);
		watchdog_on_end(tty_restore);
	}
	if (tty_take() < 0) {
		tty_restore();
		return error_errno("top: cannot set the terminal to raw keys");
	}
	return 0;
}

void tty_size(unsigned *rows, unsigned *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}
