/*
 * main.c — cprof-attach: parse the command line, check the target, run the
 * capture or the series of captures. Exit codes are the EXIT_* values of
 * options.h, documented in --help and the README.
 */
#include <signal.h>

#include "attach/cli/options.h"
#include "attach/cli/series.h"
#include "attach/engine/target.h"
#include "common/err.h"

int main(int argc, char **argv)
{
	struct options o;
	struct target t;
	int r;

	err_set_prog("cprof-attach");
	signal(SIGPIPE, SIG_IGN);
	r = options_parse(&o, argc, argv);
	if (r != 0)
		return r > 0 ? EXIT_OK : EXIT_USAGE;
	err_set_quiet(o.quiet);
	if (target_check(&t, o.pid) < 0)
		return EXIT_ATTACH;
	return series_run(&o, &t);
}
