/*
 * main.c — cprof-attach: parse the command line, check the target, run the
 * capture or the series of captures. Exit codes are the EXIT_* values of
 * options.h, documented in --help and doc/options.md.
 */
#include <signal.h>
#include <sys/resource.h>

#include "attach/cli/commands.h"
#include "attach/cli/options.h"
#include "attach/cli/run.h"
#include "attach/cli/series.h"
#include "attach/capture/target.h"
#include "common/err.h"
#include "common/hurry.h"
#include "common/watchdog.h"
#include "unwind/debugfind.h"

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
	return o.command->run ? o.command->run(&o, &t) : series_run(&o, &t);
}
