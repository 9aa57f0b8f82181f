/*
 * run.c — `cprof-attach run`: start a command with libcprof.so preloaded
 * and profile it to its end (run.h). The heap of a program that exits is
 * gone with it (its segment is a memfd of its own), so the segment types
 * are read before: the shim holds the process at its exit (a destructor,
 * after the program's atexit handlers) on a socket inherited with
 * CPROF_RUN_FD, while run reads them with the ordinary segment source,
 * then run closes the socket and the program ends. A handshake, not
 * ptrace's PTRACE_O_TRACEEXIT: a traced CMD could not be profiled by the
 * ptrace sampler (cpu without perf events, wall), every signal to CMD
 * would stop in run to be passed on, and a run that crashed would leave
 * the tracee's group-stop to the kernel; the socket's wait is bounded in
 * the shim and ends at the end of file of a run that died. The shim runs
 * it too before a SIGINT, SIGTERM or SIGHUP with the default action kills
 * CMD (a terminal's Ctrl-C reaches CMD and run at once: CMD shares run's
 * process group, as with perf record). What it misses: a CMD that ends by
 * _exit(2), SIGKILL or another signal (its segment types are not written,
 * one line says why). A stop signal to run alone is taken by run (the
 * watchdog's stops are run's from the wait on): the segment types are
 * read, then the same signal is sent to CMD, whose status run waits for
 * within the watchdog's grace.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach/capture/target.h"
#include "attach/cli/naming.h"
#include "attach/cli/optable.h"
#include "attach/cli/options.h"
#include "attach/cli/run.h"
#include "attach/cli/series.h"
#include "attach/kinds/formats.h"
#include "attach/kinds/kinds.h"
#include "attach/source/source.h"
#include "common/err.h"
#include "common/proc.h"
#include "common/watchdog.h"

extern char **environ;

#define RUN_GRACE_MS 5000      /* after a stop signal: the reads, the writes, CMD's end */
#define RUN_ARGS_MAX 256       /* words of a record's command line */

/* How the run ended, for what follows. */
enum run_end { RUN_EXITING, RUN_DIED, RUN_STOPPED, RUN_WINDOW };

struct run {
	pid_t pid;                      /* CMD */
	int sock;                       /* run's end of the handshake; -1 closed */
	int sock_lost;                  /* CMD's end closed before its exit (close-all, exec) */
	pid_t rec[OPT_MAX_KINDS];       /* the window types' records; 0 none */
	unsigned nrec;
	char names[OPT_MAX_KINDS][PATH_MAX]; /* each type's output template */
};

/*
 * Type k's output template: as given with one type, or holding %T; else
 * the type before the format's extension (p.pb.gz: p.cpu.pb.gz), or after
 * a name without it (p: p.cpu). NULL: run's default name, which has %T.
 */
static const char *run_name(const struct options *o, const struct kind *k, char *out, size_t cap)
{
	const char *ext = o->format->ext;
	size_t n, e = strlen(ext);

	if (!o->output)
		return NULL;
	if (o->nkinds == 1 || strstr(o->output, "%T")) {
		snprintf(out, cap, "%s", o->output);
		return out;
	}
	n = strlen(o->output);
	if (n > e + 1 && o->output[n - e - 1] == '.' && !strcmp(o->output + n - e, ext))
		snprintf(out, cap, "%.*s.%s.%s", (int)(n - e - 1), o->output, k->name, ext);
	else
		snprintf(out, cap, "%s.%s", o->output, k->name);
	return out;
}

/* The row named by a long option's word (--name, --name=v, an unambiguous prefix), or NULL. */
static const struct optdef *run_long(const char *w)
{
	const struct optdef *rows, *found = NULL;
	size_t len = strcspn(w, "=");
	unsigned i, n, hits = 0;

	rows = optable_all(&n);
	for (i = 0; i < n; i++) {
		if (strncmp(rows[i].name, w, len))
			continue;
		if (strlen(rows[i].name) == len)
			return &rows[i];
		found = &rows[i];
		hits++;
	}
	return hits == 1 ? found : NULL;
}

/* Whether a record is given its own of this option (the type, file and window). */
static int run_own(int key)
{
	return key == 't' || key == 'o' || key == 'd';
}

/*
 * Of run's option words w[0..n), those a window type's record takes too,
 * into out (at most cap); the flags cut from before a -t, -o or -d in one
 * word ("-qt") are copied to pool (pcap bytes). They were parsed already:
 * only the shape is read.
 */
static unsigned run_pass(char **w, int n, const char **out, unsigned cap, char *pool,
			 size_t pcap)
{
	const struct optdef *d;
	unsigned k = 0;
	size_t used = 0;
	int i, j;

	for (i = 0; i < n && k + 2 < cap; i++) {
		const char *a = w[i];

		if (!strcmp(a, "--"))
			continue;
		if (!strncmp(a, "--", 2)) {
			int next = (d = run_long(a + 2)) && d->arg && d->arg[0] != '[' &&
				   !strchr(a, '=');

			if (!d || !run_own(d->key)) {
				out[k++] = a;
				if (next && i + 1 < n)
					out[k++] = w[i + 1];
			}
			i += next;
			continue;
		}
		for (j = 1; a[j]; j++) {
			if (!(d = optable_find((unsigned char)a[j])) || !d->arg)
				continue;
			if (run_own(d->key)) {
				if (j > 1 && used + (size_t)j + 1 <= pcap) {
					memcpy(pool + used, a, (size_t)j); /* the flags before it */
					pool[used + (size_t)j] = 0;
					out[k++] = pool + used;
					used += (size_t)j + 1;
				}
			} else {
				out[k++] = a;
				if (!a[j + 1] && i + 1 < n)
					out[k++] = w[i + 1];
			}
			i += !a[j + 1];
			break;
		}
		if (!a[j])
			out[k++] = a; /* flags only */
	}
	return k;
}

/* A window type's record of CMD, in a process group of its own. Its pid, or 0. */
static pid_t run_record(const struct options *o, const struct kind *k, const char *name,
			pid_t pid, char **argv)
{
	const char *args[RUN_ARGS_MAX];
	char pidbuf[16], dur[32], pool[512];
	unsigned n = 0;
	sigset_t none;
	pid_t r;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	/* No -d: to CMD's end (the longest window there is). */
	snprintf(dur, sizeof(dur), "%lluns",
		 (unsigned long long)(o->duration_given ? o->duration_ns : OPT_MAX_DURATION_NS));
	args[n++] = "cprof-attach";
	args[n++] = "record";
	args[n++] = "-p";
	args[n++] = pidbuf;
	args[n++] = "-t";
	args[n++] = k->name;
	args[n++] = "-d";
	args[n++] = dur;
	if (name) {
		args[n++] = "-o";
		args[n++] = name;
	}
	n += run_pass(argv + 2, (int)(o->cmd - argv) - 2, args + n, RUN_ARGS_MAX - n - 1, pool,
		      sizeof(pool));
	args[n] = NULL;
	r = fork();
	if (r < 0) {
		error("cannot start the %s capture: %s", k->name, strerror(errno));
		return 0;
	}
	if (r == 0) {
		setpgid(0, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv("/proc/self/exe", (char **)args);
		_exit(EXIT_INTERNAL);
	}
	return r;
}

/*
 * Environment for CMD: env's, LD_PRELOAD with shim first (*pre: its string,
 * the caller's to free), CPROF_RUN_FD's room (filled by the child).
 */
static char **run_env(const char *shim, int fd, char *runfd, size_t cap, char **pre_out)
{
	const char *old = getenv("LD_PRELOAD");
	size_t n = 0, i, k = 0;
	char **env, *pre;

	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env || asprintf(&pre, "LD_PRELOAD=%s%s%s", shim, old && *old ? ":" : "",
			     old ? old : "") < 0) {
		free(env);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "CPROF_RUN_FD=", 13))
			env[k++] = environ[i];
	env[k++] = pre;
	*pre_out = pre;
	snprintf(runfd, cap, "CPROF_RUN_FD=%d:", fd);
	env[k++] = runfd;
	env[k] = NULL;
	return env;
}

/* In the child: its pid after "CPROF_RUN_FD=N:", with what is async-signal-safe. */
static void run_fill_pid(char *runfd, size_t cap)
{
	char digits[16];
	size_t n = 0, at = strlen(runfd);
	unsigned long p = (unsigned long)getpid();

	do
		digits[n++] = (char)('0' + p % 10);
	while ((p /= 10) && n < sizeof(digits));
	while (n && at + 1 < cap)
		runfd[at++] = digits[--n];
	runfd[at] = 0;
}

/*
 * Start CMD with the shim and the handshake's socket. Its pid, or a
 * negative exit code: -127 not found, -126 not executable, -EXIT_* else.
 */
static pid_t run_spawn(const struct options *o, const char *shim, struct run *r)
{
	char runfd[64];
	char **env, *pre = NULL;
	int sv[2], ep[2], e = 0;
	sigset_t none;
	pid_t pid;
	ssize_t n;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		goto err;
	if (pipe2(ep, O_CLOEXEC) < 0) {
		close(sv[0]);
		close(sv[1]);
		goto err;
	}
	env = run_env(shim, sv[1], runfd, sizeof(runfd), &pre);
	if (!env) {
		close(sv[0]);
		close(sv[1]);
		close(ep[0]);
		close(ep[1]);
		errno = ENOMEM;
		goto err;
	}
	pid = fork();
	if (pid == 0) {
		/* What cprof-attach changed for itself is not CMD's: blocked signals, SIGPIPE. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		close(sv[0]);
		close(ep[0]);
		fcntl(sv[1], F_SETFD, 0);
		run_fill_pid(runfd, sizeof(runfd));
		execvpe(o->cmd[0], o->cmd, env);
		e = errno;
		(void)!write(ep[1], &e, sizeof(e));
		_exit(127);
	}
	free(env);
	free(pre);
	close(sv[1]);
	close(ep[1]);
	if (pid < 0) {
		e = errno;
		close(sv[0]);
		close(ep[0]);
		errno = e;
		goto err;
	}
	/* The pipe closes at exec (close-on-exec), or brings exec's error. */
	while ((n = read(ep[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (n == (ssize_t)sizeof(e)) {
		error("cannot run \"%s\": %s", o->cmd[0], strerror(e));
		close(sv[0]);
		waitpid(pid, NULL, 0);
		return e == ENOENT ? -127 : -126;
	}
	r->sock = sv[0];
	return pid;
err:
	error("cannot run \"%s\": %s", o->cmd[0], strerror(errno));
	return -EXIT_INTERNAL;
}

/* Whether CMD has ended (a zombie now), without reaping it. */
static int run_ended(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

#define RUN_ENDING_MS 500 /* from CMD's descriptors closed at its exit to its being a zombie */

/* Whether CMD ends within RUN_ENDING_MS (pidfd: its pidfd, or -1). */
static int run_ends_soon(pid_t pid, int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int i;

	if (pidfd >= 0)
		return poll(&p, 1, RUN_ENDING_MS) > 0;
	for (i = 0; i < RUN_ENDING_MS / 10; i++, usleep(10000))
		if (run_ended(pid))
			return 1;
	return 0;
}

/* Wait for CMD's exit handshake, its end, a stop signal or -d. */
static enum run_end run_wait(const struct options *o, struct run *r)
{
	uint64_t until = o->duration_given ? clock_mono_ns() + o->duration_ns : UINT64_MAX;
	struct pollfd p[3];
	char c;

	p[0].fd = watchdog_fd();
	p[1].fd = r->sock;
	p[2].fd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	p[0].events = p[1].events = p[2].events = POLLIN;
	for (;;) {
		uint64_t now = clock_mono_ns();
		int ms = until == UINT64_MAX ? 100 : until <= now ? 0 : (int)((until - now) / 1000000 + 1);

		if (ms > 100)
			ms = 100; /* no pidfd (an old kernel): look at CMD now and then */
		if (watchdog_stop_signal())
			break;
		if (now >= until) {
			close(p[2].fd);
			return RUN_WINDOW;
		}
		if (poll(p, 3, p[2].fd >= 0 && until == UINT64_MAX ? -1 : ms) < 0 && errno != EINTR) {
			/* Not a stop: CMD is not sent one. Its profiles now, as at -d. */
			error("cannot wait for %d: %s; its profiles are read now", (int)r->pid,
			      strerror(errno));
			close(p[2].fd);
			return RUN_WINDOW;
		}
		if (p[0].fd >= 0 && (p[0].revents & POLLIN))
			break;
		if (p[1].fd >= 0 && (p[1].revents & (POLLIN | POLLHUP))) {
			if (read(p[1].fd, &c, 1) == 1) {
				close(p[2].fd);
				return RUN_EXITING;
			}
			/*
			 * CMD closed its end (close-all) or exec'd: no handshake. Or it
			 * is ending (its files close before it is a zombie): then its
			 * end comes within moments.
			 */
			p[1].fd = -1;
			r->sock_lost = !run_ends_soon(r->pid, p[2].fd);
		}
		if ((p[2].fd >= 0 && (p[2].revents & POLLIN)) || (p[2].fd < 0 && run_ended(r->pid))) {
			close(p[2].fd);
			return RUN_DIED;
		}
	}
	close(p[2].fd);
	return RUN_STOPPED;
}

/* How CMD ended without the handshake, for a message: "_exit with status 3", "signal 9 (Killed)". */
static const char *run_how(int st, char *out, size_t cap)
{
	if (WIFSIGNALED(st))
		snprintf(out, cap, "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(out, cap, "_exit with status %d", WEXITSTATUS(st));
	return out;
}

/*
 * The segment types, read now while CMD lives (each by the ordinary
 * capture, as `record -p PID -t TYPE` would). Returns the worst code.
 */
static int run_segments(const struct options *o, struct run *r, const struct target *t)
{
	struct options one;
	unsigned i;
	int code = EXIT_OK, c;

	for (i = 0; i < o->nkinds; i++) {
		if (o->kinds[i]->source != &source_segment)
			continue;
		one = *o;
		one.kind = o->kinds[i];
		one.output = o->output ? r->names[i] : NULL;
		one.duration_given = 0; /* the totals since CMD started */
		one.progress = 0;
		c = series_run(&one, t);
		if (c != EXIT_OK)
			code = c;
	}
	return code;
}

/* Say why the segment types were not read: CMD ended with no handshake. */
static void run_segments_lost(const struct options *o, const struct run *r,
			      const struct target *t, int st)
{
	char how[64];
	unsigned i;

	for (i = 0; i < o->nkinds; i++)
		if (o->kinds[i]->source != &source_segment)
			continue;
		else if (r->sock_lost)
			error("no %s profile: %d (%s) closed the descriptor of libcprof.so's exit "
			      "handshake (it closes all its descriptors, or exec'd another program), "
			      "so it ended unread",
			      o->kinds[i]->name, (int)t->pid, t->comm);
		else
			error("no %s profile: %d (%s) ended by %s, before it could be read "
			      "(libcprof.so waits for it at exit(3), a return from main, and "
			      "SIGINT, SIGTERM or SIGHUP at their default action)",
			      o->kinds[i]->name, (int)t->pid, t->comm, run_how(st, how, sizeof(how)));
}

/*
 * Reap the window types' records: they end with CMD (its exit), their
 * window (-d) or the stop signal passed on to them, each within its own
 * watchdog's bounds.
 */
static void run_records_end(struct run *r)
{
	unsigned i;
	pid_t w;
	int st;

	for (i = 0; i < r->nrec; i++) {
		if (!r->rec[i])
			continue;
		while ((w = waitpid(r->rec[i], &st, 0)) < 0 && errno == EINTR)
			;
		if (w != r->rec[i]) {
			r->rec[i] = 0;
			continue;
		}
		/* 5: CMD ended during its window; what it had is written. */
		if (!(WIFEXITED(st) && (WEXITSTATUS(st) == EXIT_OK || WEXITSTATUS(st) == EXIT_PARTIAL)))
			warning("a capture of the run ended with %s %d (said above)",
				WIFEXITED(st) ? "exit code" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		r->rec[i] = 0;
	}
}

/*
 * CMD's status, waited for; -1 when it could not be. A stop signal that
 * comes meanwhile is passed on to CMD, once (sent: the one already sent).
 */
static int run_reap(pid_t pid, int sent)
{
	struct pollfd p = { .fd = sent ? -1 : watchdog_fd(), .events = POLLIN };
	pid_t w;
	int st;

	for (;;) {
		w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return st;
		if (w < 0 && errno != EINTR)
			return -1;
		if (!sent && (sent = watchdog_take_stop())) {
			kill(pid, sent);
			p.fd = -1;
		}
		poll(&p, 1, 50);
	}
}

/*
 * CMD as a target: ours, just exec'd, so none of target_check()'s refusals
 * applies; and one that already ended (a zombie) is no error here, it is
 * CMD's end. Its name from /proc (the exec has happened), else from cmd.
 */
static void run_target(struct target *t, pid_t pid, const char *cmd)
{
	char path[64];
	const char *base = strrchr(cmd, '/');
	ssize_t n = -1;
	size_t i;
	int fd;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->state = 'R';
	t->uid = getuid();
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, t->comm, sizeof(t->comm) - 1);
		close(fd);
	}
	if (n > 0) {
		/* The program may name itself (prctl): printable only, for our lines. */
		t->comm[n] = 0;
		t->comm[strcspn(t->comm, "\n")] = 0;
		for (i = 0; t->comm[i]; i++)
			if (t->comm[i] < 0x20 || t->comm[i] == 0x7f)
				t->comm[i] = '?';
	} else {
		snprintf(t->comm, sizeof(t->comm), "%s", base ? base + 1 : cmd);
	}
}

/* Start the window types' records of CMD. */
static void run_records(const struct options *o, struct run *r, char **argv)
{
	unsigned i;

	for (i = 0; i < o->nkinds; i++)
		if (o->kinds[i]->source != &source_segment)
			r->rec[r->nrec++] = run_record(o, o->kinds[i], o->output ? r->names[i] : NULL,
						       r->pid, argv);
}

int run_main(struct options *o, char **argv)
{
	struct run r = { .sock = -1 };
	struct target t;
	char shim[PATH_MAX];
	enum run_end end;
	unsigned i;
	int st, sig = 0;
	pid_t pid;

	for (i = 0; i < o->nkinds; i++)
		if (o->output)
			run_name(o, o->kinds[i], r.names[i], sizeof(r.names[i]));
	for (i = 0; i < o->nkinds; i++)
		if (o->output && o->nkinds > 1 && !strcmp(r.names[i], o->output))
			return error("output \"%s\": the types' files would have one name", o->output),
			       EXIT_USAGE;
	source_shim_path(shim, sizeof(shim));
	if (access(shim, R_OK) != 0) {
		error("cannot run \"%s\" with libcprof.so: not found beside cprof-attach nor at %s",
		      o->cmd[0], shim);
		return EXIT_ATTACH;
	}
	watchdog_phase("starting the command", EXIT_INTERRUPTED, 0);
	if ((pid = run_spawn(o, shim, &r)) < 0)
		return (int)-pid;
	r.pid = pid;
	/* From here CMD runs: the exit status is its own. */
	watchdog_grace_floor(RUN_GRACE_MS);
	run_target(&t, pid, o->cmd[0]);
	run_records(o, &r, argv);
	watchdog_phase("profiling the command", EXIT_INTERRUPTED, 0);
	end = run_wait(o, &r);
	/*
	 * A stop (maybe beside CMD's handshake: a terminal's Ctrl-C reaches
	 * both) is run's to act on: the reads below work as without one. The
	 * records stop with run; their files are written meanwhile.
	 */
	sig = watchdog_take_stop();
	if (end == RUN_STOPPED && !sig)
		sig = SIGINT;
	for (i = 0; sig && i < r.nrec; i++)
		if (r.rec[i])
			kill(r.rec[i], sig);
	/* One that comes during the reads is passed on after them. */
	watchdog_phase("reading the profiles from libcprof.so", EXIT_INTERRUPTED, 0);
	if (end == RUN_DIED) {
		st = run_reap(pid, 0);
		run_segments_lost(o, &r, &t, st);
	} else {
		run_segments(o, &r, &t);
	}
	/* CMD goes on: to its end now, or without the handshake from here. */
	close(r.sock);
	if (!sig && (sig = watchdog_take_stop()))
		for (i = 0; i < r.nrec; i++)
			if (r.rec[i])
				kill(r.rec[i], sig);
	if (sig)
		kill(pid, sig);
	if (end == RUN_WINDOW && !o->quiet)
		note("the window has passed; %d (%s) runs on unprofiled until it exits",
		     (int)pid, t.comm);
	watchdog_phase("waiting for the command to exit", EXIT_INTERRUPTED, 0);
	run_records_end(&r);
	if (end != RUN_DIED)
		st = run_reap(pid, sig);
	if (st < 0)
		return EXIT_INTERNAL;
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}
