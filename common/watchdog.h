#ifndef CPROF_WATCHDOG_H
#define CPROF_WATCHDOG_H
/*
 * watchdog — the one reader of cprof-attach's stop signals (SIGINT,
 * SIGTERM, SIGHUP), and the guard that keeps every phase stoppable and
 * every read of a target's memory bounded in time.
 *
 * Invariants:
 *  - once watchdog_start() has run (before any other thread exists), the
 *    stop signals are blocked in every thread and taken only by the
 *    watchdog's thread: the loops that wait (sampling, a series' sleep)
 *    poll watchdog_fd(), which stays readable once a stop is asked; the
 *    phases that only compute poll watchdog_stop_signal() or
 *    watchdog_cut() at their natural step;
 *  - a stop asked WATCHDOG_CUT_MS ago makes watchdog_cut() true: work
 *    that can be cut short (source lines) is, so that what was collected
 *    is still written in time;
 *  - WATCHDOG_GRACE_MS after the first stop signal, or at a second one,
 *    a process still running is ended by the watchdog: one line naming the
 *    signal and the phase it was in, then _exit() with the phase's code
 *    (a main thread that reported progress, watchdog_progress(), in the
 *    last WATCHDOG_STALL_MS is working, not stuck: it gets up to
 *    WATCHDOG_GRACE_MAX_MS, so a slow machine's Ctrl-C still writes)
 *    (watchdog_phase()). An output file is never half-written by this
 *    (writer/outfile.h: the final name appears only by rename), and the
 *    kernel detaches every thread still seized when the tracer exits;
 *  - a read of a target's memory (vmread.h) that has not returned
 *    WATCHDOG_READ_MS after it began ends the process the same way, with
 *    a line naming the process and the address: such a read waits in the
 *    kernel for a page the target (userfaultfd) or a FUSE server holds,
 *    killably only, and nothing but the process's exit ends it. Once a
 *    stop is asked, a read a quarter of a second old is taken as stuck at
 *    once: its thread could do nothing more in the grace;
 *  - without watchdog_start() (unit tests, tools) nothing here runs:
 *    watchdog_fd() is -1 and the stop functions say no stop was asked.
 */
#include <stdint.h>
#include <sys/types.h>

#define WATCHDOG_CUT_MS 400
#define WATCHDOG_GRACE_MS 1000
#define WATCHDOG_STALL_MS 300
#define WATCHDOG_GRACE_MAX_MS 3000
#define WATCHDOG_READ_MS 3000

/*
 * Block the stop signals in the calling thread (every thread created
 * later inherits the mask) and start the thread that takes them. Call
 * before any other thread exists. 0, or -1 (message printed; the stop
 * signals are then read by the loops' signalfds, as without a watchdog).
 */
int watchdog_start(void);

/* Whether the watchdog runs (and so owns the stop signals). */
int watchdog_running(void);

/* A descriptor readable once a stop is asked, never to be read or closed; -1 without a watchdog. */
int watchdog_fd(void);

/* The signal that asked to stop, or 0 (0 too once watchdog_take_stop() took it). */
int watchdog_stop_signal(void);

/*
 * Take the stops: from now on watchdog_stop_signal() says 0, so the work
 * after a stop (reads of the target, which a stop otherwise cuts at once)
 * runs as without one, for the caller acts on it itself; it learns of one
 * by calling this again (the signal asked, or 0: none yet) or by
 * watchdog_fd(). The grace still runs from the signal, and a second
 * signal still ends the process. `run` takes them to read its command's
 * profiles before passing the signal on.
 */
int watchdog_take_stop(void);

/*
 * Say that the work after a stop goes on (a sample recorded, an address
 * looked up, a block written): cheap, a relaxed store of the clock once
 * a stop was asked, nothing before.
 */
void watchdog_progress(void);

/* Whether a stop was asked at least WATCHDOG_CUT_MS ago: cut work short now. */
int watchdog_cut(void);

/*
 * The phase the main thread is in (a string that lives for ever, "writing
 * the profile"), for the line the watchdog prints when it must end the
 * process, and the exit code it then ends it with. grace_ms: how long
 * after a stop signal the phase may run on (0: WATCHDOG_GRACE_MS); a
 * phase with nothing to lose (the last pushes: the spool keeps them)
 * gives less.
 */
void watchdog_phase(const char *phase, int code, int grace_ms);

/*
 * From now on no phase's grace is shorter than ms (main thread, before a
 * stop): `run` reads several profiles and waits for its command after a
 * stop signal, more than one capture's second. A second signal still ends
 * the process at once.
 */
void watchdog_grace_floor(int ms);

/*
 * Say that capture number of a series should be done by monotonic time
 * by_ns (0: no bound). Past it, still in the same phase, the watchdog
 * says so in one warning, once, and lets it go on: a series never
 * stalls silently. watchdog_phase() clears it.
 */
void watchdog_due(uint64_t by_ns, unsigned number);

/*
 * Call fn just before the watchdog ends the process (before its line and
 * _exit, which runs no atexit handler): what must be given back whatever
 * happens, such as a terminal in raw mode. fn runs on the watchdog's
 * thread while others may be stuck: async-signal-safe calls only. One
 * hook; a later call replaces it.
 */
void watchdog_on_end(void (*fn)(void));

/*
 * Mark the calling thread as reading process pid's memory at addr since
 * now (watchdog_read_end() when the read returned). A slot for the pair;
 * -1 when every slot is taken (the read then goes unwatched).
 */
int watchdog_read_begin(pid_t pid, uint64_t addr);
void watchdog_read_end(int slot);

#endif
