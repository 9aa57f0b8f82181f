#ifndef CPROF_PROC_H
#define CPROF_PROC_H
/*
 * proc — reading small /proc text files and the clocks.
 *
 * Invariants:
 *  - /proc text is untrusted input: every read is bounded by the caller's
 *    buffer, the result is always NUL-terminated, and a file longer than the
 *    buffer is reported as truncated rather than read past;
 *  - nothing here allocates.
 */
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Read the file at path into buf (at most cap-1 bytes, then a NUL).
 * Returns the number of bytes read, or -1 with errno set. When the file has
 * more than cap-1 bytes, returns cap-1 with errno set to EFBIG.
 */
ssize_t proc_read(const char *path, char *buf, size_t cap);

/* Like proc_read() on an open descriptor, reading from offset 0 (pread). */
ssize_t proc_pread(int fd, char *buf, size_t cap);

/*
 * Like proc_pread(), for a file of one line that the kernel writes whole
 * (a task's stat, syscall, schedstat, comm: single-record seq files give
 * the record entire to a first read with room for it): one pread(2), not
 * two, when the text read ends with its newline before buf is full; else
 * the reading to EOF of proc_pread(). A 200-thread snapshot made 1200
 * fewer system calls.
 */
ssize_t proc_pread_line(int fd, char *buf, size_t cap);

/*
 * Fields 14 and 15 of a /proc stat line (utime and stime, in clock ticks,
 * sysconf(_SC_CLK_TCK) a second), counted after the comm's last ')' (a
 * comm may hold spaces and parentheses). 0, or -1 when the line does not
 * hold them.
 */
int proc_stat_times(const char *stat, uint64_t *utime, uint64_t *stime);

/*
 * A task's syscall line (/proc/PID/task/TID/syscall): the system call it
 * is blocked in (*nr; -1: blocked, not in one) and its user sp and pc.
 * 0; 1 when the task is running (no registers to read); -1 when the line
 * is malformed.
 */
int proc_syscall(const char *line, long *nr, uint64_t *sp, uint64_t *pc);

/*
 * A schedstat line, "CPU_NS RUNQUEUE_NS SLICES": the task's CPU clock, the
 * time it waited for a CPU (queued_ns, when not NULL) and the times it was
 * put on a CPU (each 0 when the line stops short of it). 0, or -1 when
 * the line does not start with a number.
 */
int proc_schedstat(const char *line, uint64_t *cpu_ns, uint64_t *queued_ns, uint64_t *slices);

/*
 * A thread's voluntary and involuntary context switches since it began
 * (/proc/PID/task/TID/status, its first 4 KiB). 0, or -1 when unreadable.
 */
int proc_task_switches(pid_t pid, pid_t tid, uint64_t *vol, uint64_t *invol);

/*
 * The signals that ask cprof-attach to stop early (SIGINT, SIGTERM,
 * SIGHUP), as a set; with_child adds SIGCHLD. Every thread blocks them and
 * reads them from a signalfd.
 */
void proc_stop_signals(sigset_t *set, int with_child);

/* Monotonic time, in nanoseconds. */
uint64_t clock_mono_ns(void);

/* Wall-clock time, in nanoseconds since the epoch. */
uint64_t clock_real_ns(void);

/*
 * Process pid's CPU clock (every thread, living and ended), in ns; 0 when
 * it cannot be read. One syscall, allowed for any process; the kernel
 * sums every thread for it.
 */
uint64_t clock_process_cpu_ns(pid_t pid);

#endif
