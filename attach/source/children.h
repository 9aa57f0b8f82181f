#ifndef CPROF_CHILDREN_H
#define CPROF_CHILDREN_H
/*
 * children — a process's descendants, from /proc/PID/task/TID/children
 * (every thread's children; a forked child is its forking thread's), and
 * the CPU each used, for pre-forking services whose work is done by
 * workers: nginx's master, PostgreSQL's postmaster.
 *
 * Invariants:
 *  - everything read is /proc text (untrusted, bounded); a process that
 *    vanishes while it is read is simply left out;
 *  - at most CHILDREN_MAX descendants are listed (the rest are counted);
 *  - nothing here traces or stops anything.
 */
#include <stdint.h>
#include <sys/types.h>

#define CHILDREN_MAX 256

struct child_cpu {
	pid_t pid;
	char comm[16];
	uint64_t cpu_ticks; /* utime + stime, in clock ticks */
};

/*
 * The descendants of root (not root itself), breadth first: children,
 * then theirs. Returns how many were written to out (at most max).
 */
int children_list(pid_t root, pid_t *out, int max);

/*
 * Fill out[0..n) with root's descendants and their CPU so far; returns n.
 * For the hint only: when root has more than 256 threads, only the
 * children of its main thread (and all of theirs) are looked at.
 */
int children_cpu(pid_t root, struct child_cpu *out, int max);

/*
 * After a capture of root over window_ns in which root used own_ns of CPU:
 * if that is next to nothing (under 1% of one core) and its descendants
 * used at least ten times as much since before (as children_cpu() read
 * it), say so on stderr, naming the busiest (pid, command, share of their
 * CPU) and --children. A master that forks a worker now and then is not
 * idle, but its profile still misses the work. Returns how many
 * descendants used CPU (0 when nothing was said).
 */
int children_note(pid_t root, const char *comm, const struct child_cpu *before, int nbefore,
		  uint64_t own_ns, uint64_t window_ns);

#endif
