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
 *  - a read can wait in the kernel for as long as the target wants (a
 *    page it registered with userfaultfd and never resolves, a file on a
 *    FUSE mount whose server does not answer), and only the reader's
 *    death ends that wait. So every read is bounded in time:
 *    vm_read_bounded() on a helper thread with a deadline, after which
 *    the caller goes on without the bytes; vm_read() and vm_read_upto(),
 *    the hot paths (a stack copy per sample), on the calling thread under
 *    the watchdog (watchdog.h), which ends the process when one has not
 *    returned in WATCHDOG_READ_MS;
 *  - vm_read() and vm_read_upto() allocate nothing and keep no state.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VMREAD_DEADLINE_MS 2000 /* vm_read_bounded() */
#define VMREAD_BOUNDED_MAX (256u << 20) /* the most one bounded read copies */

/* Copy the n bytes at addr in process pid into buf: 0, or -1 when any is unreadable. */
int vm_read(pid_t pid, uint64_t addr, void *buf, size_t n);

/*
 * Copy up to cap bytes from addr up into buf, page by page so that the
 * first unreadable page ends the copy cleanly: the number of bytes copied
 * (0 when addr itself is unreadable). At most 256 pages (1 MiB) are asked
 * for at once; cap beyond that copies 1 MiB.
 */
size_t vm_read_upto(pid_t pid, uint64_t addr, void *buf, size_t cap);

/*
 * Like vm_read(), on a helper thread, waiting at most VMREAD_DEADLINE_MS
 * (less when a stop signal comes: watchdog.h). 0; -1 with errno EFAULT
 * (unreadable), ETIMEDOUT (the read did not return: a warning says so
 * once, the thread is left to its read, and every later bounded read
 * fails at once the same way), EINTR (a stop signal), ENOMEM or E2BIG
 * (n over VMREAD_BOUNDED_MAX). The bytes go through the helper's own
 * buffer, so a read that returns after its deadline writes nothing of
 * the caller's. One caller at a time (a mutex).
 */
int vm_read_bounded(pid_t pid, uint64_t addr, void *buf, size_t n);

#endif
