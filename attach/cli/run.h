#ifndef CPROF_RUN_H
#define CPROF_RUN_H
/*
 * run — `cprof-attach run [options] -- CMD [ARGS...]`: start CMD with
 * libcprof.so preloaded, profile it until it exits, -d passes or a stop
 * signal comes, write one profile per type, and exit with CMD's status.
 *
 * Invariants:
 *  - CMD is never left stopped or held: the exit handshake (shim/runexit.c)
 *    is bounded in the shim and ends at once when cprof-attach closes its
 *    end or dies; nothing is ptraced by run itself;
 *  - once CMD ran, the exit status is CMD's (128+N for signal N); before,
 *    127 (not found), 126 (not executable) or an EXIT_* code;
 *  - a window type (cpu, wall, offcpu) is captured by a `record -p` of its
 *    own (a child cprof-attach in its own process group, so a terminal's
 *    Ctrl-C reaches it once, from run); the segment types are read by run
 *    while CMD is alive: at its exit (handshake), at -d, or at the stop.
 */
struct options;

/* Run o->cmd as o asks (argv: the whole command line, for the window types' records). */
int run_main(struct options *o, char **argv);

#endif
