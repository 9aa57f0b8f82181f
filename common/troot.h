#ifndef CPROF_TROOT_H
#define CPROF_TROOT_H
/*
 * troot — opening a file that a target process named (a mapped object, its
 * perf map, a debug file its object points at) the way the target itself
 * would open it: resolved inside the target's root, read with the target's
 * file-system credentials, and only when it is a regular file.
 *
 *   - the path is resolved under an O_PATH descriptor of /proc/PID/root
 *     (opened with cprof's own credentials) by openat2() with
 *     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, or, where openat2() is
 *     missing, by a walk of one component at a time that never asks the
 *     kernel for "..": a stack of the directories walked gives the parent,
 *     "/" and ".." at the root stay at the root, an absolute symbolic link
 *     starts again at the root, a link's text is read (a magic link in
 *     /proc is followed as the text it shows, never as the kernel's jump),
 *     at most TROOT_MAX_LINKS links;
 *   - the type is read by fstat() on the O_PATH descriptor, never on the
 *     path: a FIFO, a device, a socket, a directory, or a file of procfs
 *     or sysfs is refused before anything opens it for reading (no device
 *     driver's open() runs, no FIFO blocks); the regular file is then
 *     reopened for reading through /proc/self/fd, which names the same
 *     inode and cannot be swapped;
 *   - both steps run with the calling thread's fsuid, fsgid and
 *     supplementary groups switched to the target's (raw system calls:
 *     they change this thread only) and then restored, on every path, with
 *     the process's dumpable flag and parent-death signal as they were;
 *     from fsuid 0 to another the kernel drops the file-system
 *     capabilities, so root opens exactly what that user could. Where the
 *     switch is refused (cprof not root) the file's owner and mode are
 *     checked against the target's ids instead.
 *
 * Invariants:
 *  - nothing is ever opened on the host's path when the target's copy is
 *    missing; a path never resolves outside the given root;
 *  - a returned descriptor is O_RDONLY | O_CLOEXEC | O_NONBLOCK of a
 *    regular file; nothing else stays open;
 *  - *why, when set, is a static phrase for a note ("a FIFO", "not
 *    readable by the target"...); it stays NULL when the file is simply
 *    not there, which needs no note.
 */
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define TROOT_MAX_LINKS 40
#define TROOT_MAX_GROUPS 256
#define TROOT_MAX_PATH 4096

/* The file-system identity a target opens files with. */
struct troot_cred {
	uid_t fsuid;
	gid_t fsgid;
	size_t ngroups; /* at most TROOT_MAX_GROUPS: fewer groups only ever read less */
	gid_t groups[TROOT_MAX_GROUPS];
};

/* Follow a symbolic link at the last component (inside the root). */
#define TROOT_FOLLOW 1u

/*
 * Process pid's fsuid, fsgid and supplementary groups, from
 * /proc/PID/status. 0, or -1 with errno.
 */
int troot_cred_read(pid_t pid, struct troot_cred *c);

/* An O_PATH descriptor of process pid's root directory, or -1 with errno. */
int troot_root_open(pid_t pid);

/*
 * Open path (absolute, or relative to the root) under the directory rootfd
 * as a process with credentials c (NULL: cprof's own) would, for reading:
 * the rules above. An fd, or -1 with errno (and *why set when the refusal
 * deserves a note).
 */
int troot_openat(int rootfd, const struct troot_cred *c, const char *path, unsigned flags,
		 const char **why);

/*
 * troot_openat() in process pid's root with pid's credentials. pid <= 0:
 * the host's root with cprof's own credentials.
 */
int troot_open(pid_t pid, const char *path, unsigned flags, const char **why);

/*
 * path as process pid sees it, from path as /proc/PID/maps shows it to
 * cprof: a target chrooted in cprof's own mount namespace has its files
 * shown with its root's path in front, which is cut off (a pointer into
 * path); any other path is returned as it is.
 */
const char *troot_target_path(pid_t pid, const char *path);

/*
 * Reopen for reading the file that the descriptor fd refers to (an O_PATH
 * descriptor, or a /proc/PID/map_files entry opened O_PATH), when it is a
 * regular file: its type is checked on fd. An fd, or -1 with errno and *why.
 */
int troot_reopen(int fd, const char **why);

/*
 * Whether credentials c may read the file st describes by its owner, group
 * and mode bits (uid 0 may read anything): the check used when the switch
 * of credentials is refused.
 */
int troot_may_read(const struct stat *st, const struct troot_cred *c);

/*
 * 1 the first time key is seen in this run, else 0 (a bounded set; once
 * full, 0): for one note per file rather than one per frame.
 */
int troot_first_time(const char *key);

/* For tests: 1 resolves with the walk as if openat2() were missing. */
extern int troot_test_no_openat2;
/* For tests: 1 acts as if the switch of credentials were refused. */
extern int troot_test_no_switch;

#endif
