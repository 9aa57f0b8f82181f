/*
 * hurry.c — the start at a higher priority (hurry.h): the thread and the
 * priority found are kept, so that the end restores them on that thread
 * only (setpriority(PRIO_PROCESS, tid) is per thread on Linux).
 */
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/hurry.h"

static pid_t hurried;  /* the thread raised, 0: none (atomic) */
static int found_nice; /* its priority before */

static pid_t hurry_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

void hurry_begin(void)
{
	pid_t tid = hurry_tid();
	int n;

	if (__atomic_load_n(&hurried, __ATOMIC_ACQUIRE))
		return;
	errno = 0;
	n = getpriority(PRIO_PROCESS, (id_t)tid);
	if (errno || n <= HURRY_NICE || setpriority(PRIO_PROCESS, (id_t)tid, HURRY_NICE) < 0)
		return;
	found_nice = n;
	__atomic_store_n(&hurried, tid, __ATOMIC_RELEASE);
}

void hurry_end(void)
{
	pid_t tid = hurry_tid();

	if (__atomic_load_n(&hurried, __ATOMIC_ACQUIRE) != tid)
		return;
	setpriority(PRIO_PROCESS, (id_t)tid, found_nice);
	__atomic_store_n(&hurried, 0, __ATOMIC_RELEASE);
}

int hurry_nice(void)
{
	pid_t tid = hurry_tid();
	int n;

	if (__atomic_load_n(&hurried, __ATOMIC_ACQUIRE) == tid)
		return found_nice;
	errno = 0;
	n = getpriority(PRIO_PROCESS, (id_t)tid);
	return errno ? 0 : n;
}
