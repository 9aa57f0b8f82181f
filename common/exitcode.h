#ifndef CPROF_EXITCODE_H
#define CPROF_EXITCODE_H
/*
 * exitcode — cprof-attach's exit codes, documented in --help, the man
 * page and doc/options.md. A source decides them; the command line passes
 * them on.
 */
#define EXIT_OK 0
#define EXIT_INTERNAL 1  /* out of memory or another internal failure */
#define EXIT_USAGE 2     /* bad option or value */
#define EXIT_ATTACH 3    /* cannot attach to the target */
#define EXIT_GONE 4      /* the target went away before anything was captured */
#define EXIT_PARTIAL 5   /* the target exited or exec'd mid-capture; what was captured is written */
#define EXIT_OUTPUT 6    /* the profile could not be written */
#define EXIT_UNSENT 7    /* --push: every capture went well, but not every profile was pushed */
/*
 * Ended by the watchdog (common/watchdog.h) before this capture's profile
 * was written: a stop signal not obeyed within its grace, a second stop
 * signal, or a read of the target's memory that did not return. The
 * profiles of a series' earlier captures are written; no file is ever
 * half-written.
 */
#define EXIT_INTERRUPTED 8

#endif
