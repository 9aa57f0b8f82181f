#ifndef CPROF_TARGET_H
#define CPROF_TARGET_H
/*
 * target — what cprof-attach learns about a process before and while
 * attaching, and the one-line explanations when it cannot.
 *
 * Invariants:
 *  - every refusal is one line naming the pid (and the process name when
 *    known) and the cause, with a hint when the user can do something;
 *  - /proc text is untrusted: fields are parsed with bounds and a missing
 *    field is "unknown", never a crash.
 */
#include <stdint.h>
#include <sys/types.h>

struct target {
	pid_t pid;       /* the process (thread group) id */
	char comm[17];
	char state;      /* 'R', 'S', 'Z', ... */
	pid_t tracer;    /* TracerPid, 0 when none */
	uid_t uid;       /* real uid */
	int kthread;     /* a kernel thread: nothing in user space to profile */
};

/* The longest window (-d at most a week: options.h's OPT_MAX_DURATION_NS). */
#define TARGET_WINDOW_MAX_NS (7ull * 24 * 3600 * 1000000000ull)

/*
 * The capture line, once, unless quiet: "profiling PID (COMM)[ and its
 * descendants]: WHAT for Ds at HZ Hz[; HOW]" (HOW: the sampler and why); a window of
 * TARGET_WINDOW_MAX_NS, run's, is "until it exits".
 */
void target_say_capture(pid_t pid, const char *comm, int children, const char *what,
			uint64_t duration_ns, uint64_t period_ns, const char *how);

/* The one message for a target gone before its first sample; returns EXIT_GONE. */
int target_gone_before(pid_t pid, const char *comm);

/*
 * Read /proc/PID/status and refuse what cannot be profiled: no such
 * process, a zombie, cprof-attach itself, a process already traced. A
 * thread id is replaced by its process id (with a note). 0 or -1 (message
 * printed).
 */
int target_check(struct target *t, pid_t pid);

/*
 * Explain, as a warning, that the right to trace t was lost mid-capture:
 * another tracer (named) attached, or its credentials changed.
 */
void target_lost_access(const struct target *t);

/* Whether pid has exited (gone, or a zombie). */
int target_exited(pid_t pid);

/* Whether pid is traced by a process other than cprof-attach. */
int target_traced_by_other(pid_t pid);

/*
 * What identifies the program pid runs: its executable's inode and where
 * its code starts (an exec changes one or both). 0, or -1 when the
 * executable cannot be looked at (*start_code 0 when stat is unreadable).
 */
int target_exec_id(pid_t pid, uint64_t *ino, uint64_t *start_code);

/*
 * Whether pid runs in secure-execution mode (AT_SECURE in its auxiliary
 * vector: setuid, setgid, file capabilities), where the loader ignores
 * LD_PRELOAD: 1 yes, 0 no, -1 unknown (auxv unreadable).
 */
int target_secure_exec(pid_t pid);

/* Explain a failed PTRACE_SEIZE with errno e; returns -1. */
int target_attach_error(const struct target *t, int e);

#endif
