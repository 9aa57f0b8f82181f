#ifndef CPROF_SERIES_H
#define CPROF_SERIES_H
/*
 * series — one capture, or a series of them (--every/--count): name each
 * file, capture, write, report, wait for the next start; stop at SIGINT or
 * SIGTERM, or when the target goes away.
 *
 * Invariants:
 *  - between captures the target is not touched at all;
 *  - the exit code is that of the last capture, except that a series the
 *    target ended after at least one profile was written exits
 *    EXIT_PARTIAL (and EXIT_GONE when none was), and that a series whose
 *    captures all went well but whose profiles were not all pushed
 *    (--push) exits EXIT_UNSENT;
 *  - pushing happens beside the captures (push.h): the schedule of the
 *    series never waits for the network;
 *  - SIGINT, SIGTERM and SIGHUP are blocked in every thread from the start
 *    and taken by the watchdog (common/watchdog.h), so no signal can kill
 *    cprof-attach between opening a temporary file and renaming it; each
 *    phase tells the watchdog its name and the exit code to end with if
 *    it does not stop in time;
 *  - a capture of a series that ends later than its interval plus a
 *    margin is reported (one warning), and one still running by then is
 *    reported by the watchdog while it runs: a series never falls behind
 *    silently.
 */
struct capture_req;
struct debuginfo;
struct linecache;
struct options;
struct target;

/*
 * The request for one capture of t as o asks: the kind's row, the
 * format's needs, the options (top builds its intervals' with it too).
 */
void series_request(const struct options *o, const struct target *t, struct debuginfo *debug,
		    struct linecache *lc, struct capture_req *q);

/* Run the captures o asks for on t. Returns an EXIT_* code. */
int series_run(const struct options *o, const struct target *t);

#endif
