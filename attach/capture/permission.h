#ifndef CPROF_PERMISSION_H
#define CPROF_PERMISSION_H
/*
 * permission — why the kernel refused to let us trace a process, told
 * from what this machine shows: the owner, Yama's ptrace_scope (only when
 * Yama is there), our CAP_SYS_PTRACE, the target's dumpability, a user
 * namespace, a seccomp filter on us. A cause is named only when it is
 * present; when none is, the message says so and names what is left (a
 * security module, the process's own protection).
 */
#include <stddef.h>
#include <sys/types.h>

/* The cause of an EPERM attaching to pid (owned by uid), as one clause, into buf. */
void permission_why(pid_t pid, uid_t uid, char *buf, size_t cap);

#endif
