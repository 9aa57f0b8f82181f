#ifndef CPROF_VMREAD_H
#define CPROF_VMREAD_H
/*
 * vmread — copying bytes out of another process's memory without stopping
 * it (process_vm_readv), the one way cprof-attach reads a target's stacks,
 * code and segment.
 *
 * Invariants:
 *  - what is read is untrusted and may be changing under the read: callers
 *    validate it; a hole in the target's address space is an answer (a
 *    failed or a short read), never a crash;
 *  - nothing here allocates or keeps state.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Copy the n bytes at addr in process pid into buf: 0, or -1 when any is unreadable. */
int vm_read(pid_t pid, uint64_t addr, void *buf, size_t n);

/*
 * Copy up to cap bytes from addr up into buf, page by page so that the
 * first unreadable page ends the copy cleanly: the number of bytes copied
 * (0 when addr itself is unreadable). At most 256 pages (1 MiB) are asked
 * for at once; cap beyond that copies 1 MiB.
 */
size_t vm_read_upto(pid_t pid, uint64_t addr, void *buf, size_t cap);

#endif
