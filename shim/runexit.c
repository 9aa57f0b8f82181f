/*
 * runexit.c — the shim's half of `cprof-attach run`'s exit handshake. A
 * process started by `run` inherits a socket and CPROF_RUN_FD=FD:PID; the
 * process whose pid is PID (never a fork child or a program it execs: the
 * pid differs, and the socket is made close-on-exec here) keeps FD, and
 * at its exit (exit(3) or a return from main: this destructor runs after
 * the program's atexit handlers and destructors) writes one byte and
 * waits for cprof-attach's answer while its memory, and so its segment,
 * is still whole: cprof-attach reads the heap, allocs, block, mutex and
 * threadcreate profiles meanwhile. The wait is bounded
 * (RUNEXIT_WAIT_MS), and a cprof-attach that dies or closes its end
 * (SIGKILL, a crash, a window that ended) ends it at once (end of file):
 * the program is never held. The same handshake runs before a SIGINT,
 * SIGTERM or SIGHUP kills it (a handler installed only where the action
 * was the default, and which ends in that default action), so a
 * terminal's Ctrl-C, which reaches the program and cprof-attach at once,
 * still gives its heap. Nothing here allocates; a descriptor that is
 * not a socket, or a malformed value, leaves the handshake off, and so
 * does one the program closed (its identity is checked at exit).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim/shim.h"

#define RUNEXIT_WAIT_MS 10000 /* the longest a program waits at its exit */

static int runexit_fd = -1;
static void runexit_signals(void);

/* libc's sigaction under its other exported name: sigaction itself is ours (below). */
int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
static pid_t runexit_pid; /* the process started by run */
static dev_t runexit_dev;  /* the socket's identity: a program that closed it and */
static ino_t runexit_ino;  /* opened another at the same number is not written to */

/* "FD:PID", both decimal; 0 or -1. */
static int runexit_parse(const char *v, long *fd, long *pid)
{
	char *end;

	errno = 0;
	*fd = strtol(v, &end, 10);
	if (errno || end == v || *end != ':' || *fd < 0 || *fd > 65535)
		return -1;
	v = end + 1;
	*pid = strtol(v, &end, 10);
	if (errno || end == v || *end || *pid <= 0)
		return -1;
	return 0;
}

__attribute__((constructor)) static void runexit_init(void)
{
	const char *v = secure_getenv("CPROF_RUN_FD");
	struct stat st;
	long fd, pid;

	if (!v || runexit_parse(v, &fd, &pid) < 0 || pid != (long)getpid())
		return;
	if (fstat((int)fd, &st) < 0 || !S_ISSOCK(st.st_mode))
		return;
	(void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	runexit_fd = (int)fd;
	runexit_pid = (pid_t)pid;
	runexit_dev = st.st_dev;
	runexit_ino = st.st_ino;
	runexit_signals();
}

static uint64_t runexit_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * The handshake, once a process (async-signal-safe: a signal handler may
 * run it): one byte, then the answer or cprof-attach's end, at most
 * RUNEXIT_WAIT_MS.
 */
static void runexit_handshake(void)
{
	struct pollfd p;
	struct stat st;
	uint64_t end;
	char c = 'x';
	int fd, r;

	/* A fork child that exits by exit(3) has the descriptor too: only the process started. */
	if (getpid() != runexit_pid)
		return;
	if ((fd = __atomic_exchange_n(&runexit_fd, -1, __ATOMIC_ACQ_REL)) < 0)
		return;
	if (fstat(fd, &st) < 0 || st.st_dev != runexit_dev || st.st_ino != runexit_ino)
		return; /* closed by the program (a daemon's close-all), or another file now */
	/* MSG_NOSIGNAL: a cprof-attach gone must not end the program by SIGPIPE. */
	if (send(fd, &c, 1, MSG_NOSIGNAL) == 1) {
		end = runexit_ms() + RUNEXIT_WAIT_MS;
		p.fd = fd;
		p.events = POLLIN;
		for (;;) {
			uint64_t now = runexit_ms();

			if (now >= end)
				break;
			r = poll(&p, 1, (int)(end - now));
			if (r > 0 || (r < 0 && errno != EINTR))
				break;
		}
		/* The answer, or the end of file of a cprof-attach gone: either way, on. */
		(void)!read(fd, &c, 1);
	}
	close(fd);
}

__attribute__((destructor)) static void runexit_fini(void)
{
	runexit_handshake();
}

/*
 * A stop signal whose action was the default (death): the handshake, then
 * the default action, as the signal would have had. A terminal's Ctrl-C
 * reaches CMD and cprof-attach at once; without this CMD's memory could
 * be gone before cprof-attach read it.
 */
static void runexit_on_signal(int sig)
{
	struct sigaction dfl;
	int e = errno;

	runexit_handshake();
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	__sigaction(sig, &dfl, NULL);
	/* Blocked in the handler: delivered, with the default action, on return. */
	raise(sig);
	errno = e;
}

/* For SIGINT, SIGTERM and SIGHUP left at their default by whoever started CMD. */
static void runexit_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction old, sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = runexit_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&sa.sa_mask, sigs[i]);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (__sigaction(sigs[i], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL)
			__sigaction(sigs[i], &sa, NULL);
}

/*
 * sigaction(2) as libc's, except that run's handler reads as the default
 * action it stands for: a program that installs its own handler only
 * over the default (Python's KeyboardInterrupt) still does. (signal(3)
 * returns it as it is: libc calls its own sigaction there.)
 */
SHIM_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int r = __sigaction(sig, act, old);

	if (r == 0 && old && !(old->sa_flags & SA_SIGINFO) && old->sa_handler == runexit_on_signal) {
		memset(old, 0, sizeof(*old));
		old->sa_handler = SIG_DFL;
		sigemptyset(&old->sa_mask);
	}
	return r;
}
