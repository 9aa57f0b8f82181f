/*
 * main.c — cprof-attach: parse the command line, check the target, run the
 * capture or the series of captures. Exit codes are the EXIT_* values of
 * options.h, documented in --help and doc/options.md.
 */
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "attach/cli/commands.h"
#include "attach/cli/options.h"
#include "attach/cli/run.h"
#include "attach/cli/series.h"
#include "attach/capture/target.h"
#include "attach/inject/inject.h"
#include "attach/source/segread.h"
#include "attach/source/source.h"
#include "common/vmread.h"
#include "common/err.h"
#include "common/hurry.h"
#include "common/watchdog.h"
#include "unwind/debugfind.h"

/* --eject: disarm an injected libcprof.so, nothing else. */
static int main_eject(const struct options *o, const struct target *t)
{
	struct inject in;
	struct seg_header h;
	char shim[PATH_MAX];
	uint64_t addr, len;
	int code;

	source_shim_path(shim, sizeof(shim));
	watchdog_phase("disarming libcprof.so", EXIT_INTERRUPTED, 0);
	if ((code = inject_prepare(&in, t->pid, shim, o->inject_deadline_ms)) != 0)
		return code;
	if (!in.mapped[0]) {
		error("cannot eject from %d (%s): libcprof.so is not loaded in it", (int)t->pid,
		      t->comm);
		return EXIT_ATTACH;
	}
	/* A preloaded shim was not armed by injection: it is left as it is. */
	if (segment_find(t->pid, &addr, &len) == 1 && vm_read(t->pid, addr, &h, sizeof(h)) == 0 &&
	    h.inject_state == SEG_INJECT_NONE && !h.inject_ns) {
		error("cannot eject from %d (%s): its libcprof.so is preloaded, not injected; it "
		      "stays as it is", (int)t->pid, t->comm);
		return EXIT_ATTACH;
	}
	if ((code = inject_disarm(&in)) != 0)
		return code;
	if (!o->quiet)
		note("libcprof.so in %d (%s) disarmed (it stays loaded, dormant)", (int)t->pid,
		     t->comm);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	struct options o;
	struct target t;
	struct rlimit rl;
	int r;

	err_set_prog("cprof-attach");
	signal(SIGPIPE, SIG_IGN);
	/*
	 * First, before any thread: the watchdog takes the stop signals for
	 * every phase (attach, sampling, lines, writing, a series' waits, the
	 * push) and ends a process that does not stop in time. Without it the
	 * capture loops read them, as they did before it.
	 */
	watchdog_start();
	watchdog_phase("reading the command line", EXIT_INTERRUPTED, 0);
	r = options_parse(&o, argc, argv);
	if (r != 0)
		return r > 0 ? EXIT_OK : EXIT_USAGE;
	err_set_quiet(o.quiet);
	for (r = 0; r < (int)o.ndebug_dirs; r++)
		debugfind_add_dir(o.debug_dirs[r]);
	/* run: before the priority and the descriptor limit, which CMD must not inherit. */
	if (o.command->launches)
		return run_main(&o, argv);
	/* The start at a higher priority, where allowed, until sampling runs (hurry.h). */
	hurry_begin();
	/*
	 * Descriptors are per thread (a /proc file cache, perf events per
	 * thread and CPU): take the hard limit, not a shell's soft 1024.
	 */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	watchdog_phase("checking the target", EXIT_INTERRUPTED, 0);
	if (target_check(&t, o.pid) < 0)
		return EXIT_ATTACH;
	if (o.eject)
		return main_eject(&o, &t);
	if (!o.inject)
		return o.command->run ? o.command->run(&o, &t) : series_run(&o, &t);
	if (!(o.inject_state = calloc(1, sizeof(*o.inject_state)))) {
		error("out of memory");
		return EXIT_INTERNAL;
	}
	o.inject_state->deadline_ms = o.inject_deadline_ms;
	r = series_run(&o, &t);
	/* Armed across the series; disarmed once at its end, whatever ended it. */
	if (o.inject_state->armed) {
		watchdog_take_stop();
		watchdog_phase("disarming libcprof.so", EXIT_INTERRUPTED, 0);
		int d = inject_disarm(o.inject_state);

		if (d != 0 && r == EXIT_OK)
			r = d == EXIT_GONE ? EXIT_GONE : EXIT_ATTACH;
		else if (d == 0 && !o.quiet)
			note("libcprof.so in %d disarmed (it stays loaded, dormant); %u remote calls, "
			     "the longest stop %.0f us, %u system-call stops in all", (int)t.pid,
			     o.inject_state->ncalls, (double)o.inject_state->stop_ns_max / 1e3,
			     o.inject_state->syscalls);
	}
	free(o.inject_state);
	return r;
}
