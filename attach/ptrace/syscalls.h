#ifndef CPROF_SYSCALLS_H
#define CPROF_SYSCALLS_H
/*
 * syscalls — x86_64 system call names, for saying where a sleeping thread
 * sleeps. The table is generated at build time from <asm/unistd_64.h>.
 */

/* The name of syscall nr ("epoll_wait"), or NULL when unknown. */
const char *syscall_name(long nr);

#endif
