/*
 * chldwake.c — waking the tracers of a family on a SIGCHLD another one
 * read. A fixed table of slots: an eventfd and a waiting mark each, taken
 * and given back under a mutex, read without it (the marks are atomic,
 * and a slot's fd stays open while its owner uses it).
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "attach/ptrace/chldwake.h"

static struct {
	int fd;      /* -1: free */
	int waiting; /* atomic */
} slots[CHLDWAKE_MAX] = { [0 ... CHLDWAKE_MAX - 1] = { -1, 0 } };
static int nslots; /* slots ever used: the broadcast's bound (atomic) */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

int chldwake_open(int *fd)
{
	int i, e = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	*fd = -1;
	if (e < 0)
		return -1;
	pthread_mutex_lock(&slots_lock);
	for (i = 0; i < CHLDWAKE_MAX && slots[i].fd >= 0; i++)
		;
	if (i < CHLDWAKE_MAX) {
		__atomic_store_n(&slots[i].waiting, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&slots[i].fd, e, __ATOMIC_RELEASE);
		if (i >= nslots)
			__atomic_store_n(&nslots, i + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&slots_lock);
	if (i >= CHLDWAKE_MAX) {
		close(e);
		return -1;
	}
	*fd = e;
	return i;
}

void chldwake_close(int slot)
{
	int fd;

	if (slot < 0 || slot >= CHLDWAKE_MAX)
		return;
	pthread_mutex_lock(&slots_lock);
	fd = slots[slot].fd;
	__atomic_store_n(&slots[slot].waiting, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slots[slot].fd, -1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&slots_lock);
	/* A broadcast writes under the lock: none can reach fd now. */
	if (fd >= 0)
		close(fd);
}

void chldwake_waiting(int slot, int on)
{
	if (slot >= 0 && slot < CHLDWAKE_MAX)
		__atomic_store_n(&slots[slot].waiting, on, __ATOMIC_SEQ_CST);
}

void chldwake_broadcast(int slot)
{
	uint64_t one = 1;
	int i, n = __atomic_load_n(&nslots, __ATOMIC_ACQUIRE), fd;

	for (i = 0; i < n; i++) {
		if (i == slot || !__atomic_load_n(&slots[i].waiting, __ATOMIC_SEQ_CST))
			continue;
		pthread_mutex_lock(&slots_lock);
		fd = slots[i].fd;
		if (fd >= 0)
			(void)!write(fd, &one, sizeof(one));
		pthread_mutex_unlock(&slots_lock);
	}
}

void chldwake_drain(int fd)
{
	uint64_t v;

	if (fd >= 0)
		(void)!read(fd, &v, sizeof(v));
}
