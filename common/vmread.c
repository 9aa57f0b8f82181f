/*
 * vmread.c — process_vm_readv, exact or up to a hole, and the bounded
 * read. The page-by-page form exists because process_vm_readv stops at
 * the first iovec it cannot read but reports the bytes of those before
 * it: one iovec per page makes "as far as the stack is mapped" a single
 * system call. The bounded read hands a job to a helper thread and waits
 * on a condition with a timeout; a job whose caller gave up belongs to
 * the helper, which frees it if its read ever returns, and exits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "common/err.h"
#include "common/proc.h"
#include "common/vmread.h"
#include "common/watchdog.h"

#define VMREAD_MAX_IOV 256
#define VMREAD_SLICE_NS 50000000ull /* how often a bounded wait looks for a stop signal */

int vm_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)addr, n };
	int slot = watchdog_read_begin(pid, addr);
	ssize_t r;

	r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	watchdog_read_end(slot);
	return r == (ssize_t)n ? 0 : -1;
}

size_t vm_read_upto(pid_t pid, uint64_t addr, void *buf, size_t cap)
{
	struct iovec local, remote[VMREAD_MAX_IOV];
	uint64_t a = addr, end = addr + cap, next;
	ssize_t r;
	int n = 0, slot;

	if (end < addr)
		end = UINT64_MAX;
	while (a < end && n < VMREAD_MAX_IOV) {
		next = (a & ~(uint64_t)4095) + 4096;
		if (next > end || next == 0)
			next = end;
		remote[n].iov_base = (void *)(uintptr_t)a;
		remote[n].iov_len = next - a;
		a = next;
		n++;
	}
	local.iov_base = buf;
	local.iov_len = (size_t)(a - addr);
	slot = watchdog_read_begin(pid, addr);
	r = process_vm_readv(pid, &local, 1, remote, (unsigned long)n, 0);
	watchdog_read_end(slot);
	return r < 0 ? 0 : (size_t)r;
}

/* One bounded read; the helper's while it runs, and for good once abandoned. */
struct vr_job {
	pid_t pid;
	uint64_t addr;
	size_t n;
	void *buf;
	ssize_t r;
	int err;
	int done;
	int abandoned;
};

static pthread_mutex_t vr_caller = PTHREAD_MUTEX_INITIALIZER; /* one caller at a time */
static pthread_mutex_t vr_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t vr_cv_job = PTHREAD_COND_INITIALIZER;
static pthread_cond_t vr_cv_done;
static int vr_cv_done_init;
static struct vr_job *vr_next; /* posted, not yet taken */
static int vr_helper;          /* a helper is waiting for jobs */
static int vr_stuck;           /* a read blocked past its deadline: no more reads */

static void *vr_main(void *arg)
{
	struct vr_job *j;
	struct iovec l, r;

	(void)arg;
	pthread_mutex_lock(&vr_mu);
	for (;;) {
		while (!vr_next)
			pthread_cond_wait(&vr_cv_job, &vr_mu);
		j = vr_next;
		vr_next = NULL;
		pthread_mutex_unlock(&vr_mu);
		l.iov_base = j->buf;
		l.iov_len = j->n;
		r.iov_base = (void *)(uintptr_t)j->addr;
		r.iov_len = j->n;
		j->r = process_vm_readv(j->pid, &l, 1, &r, 1, 0);
		j->err = errno;
		pthread_mutex_lock(&vr_mu);
		if (j->abandoned) {
			/* Its caller went on without it, and a new helper took over. */
			pthread_mutex_unlock(&vr_mu);
			free(j->buf);
			free(j);
			return NULL;
		}
		j->done = 1;
		pthread_cond_broadcast(&vr_cv_done);
	}
	return NULL;
}

static int vr_start_helper(void)
{
	pthread_condattr_t ca;
	pthread_attr_t a;
	pthread_t th;
	int r;

	if (!vr_cv_done_init) {
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&vr_cv_done, &ca);
		pthread_condattr_destroy(&ca);
		vr_cv_done_init = 1;
	}
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 << 10);
	r = pthread_create(&th, &a, vr_main, NULL);
	pthread_attr_destroy(&a);
	if (r)
		return -1;
	vr_helper = 1;
	return 0;
}

int vm_read_bounded(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct vr_job *j = NULL;
	struct timespec ts;
	uint64_t now, deadline, until;
	int e = 0, r = -1;

	if (n > VMREAD_BOUNDED_MAX) {
		errno = E2BIG;
		return -1;
	}
	pthread_mutex_lock(&vr_caller);
	pthread_mutex_lock(&vr_mu);
	if (vr_stuck) {
		e = ETIMEDOUT;
		goto out;
	}
	if (!vr_helper && vr_start_helper() < 0) {
		e = EAGAIN;
		goto out;
	}
	j = calloc(1, sizeof(*j));
	if (!j || !(j->buf = malloc(n ? n : 1))) {
		free(j);
		j = NULL;
		e = ENOMEM;
		goto out;
	}
	j->pid = pid;
	j->addr = addr;
	j->n = n;
	vr_next = j;
	pthread_cond_signal(&vr_cv_job);
	deadline = clock_mono_ns() + VMREAD_DEADLINE_MS * 1000000ull;
	while (!j->done) {
		now = clock_mono_ns();
		if (now >= deadline || watchdog_stop_signal())
			break;
		until = now + VMREAD_SLICE_NS < deadline ? now + VMREAD_SLICE_NS : deadline;
		ts.tv_sec = (time_t)(until / 1000000000u);
		ts.tv_nsec = (long)(until % 1000000000u);
		pthread_cond_timedwait(&vr_cv_done, &vr_mu, &ts);
	}
	if (!j->done) {
		if (vr_next == j) {
			vr_next = NULL; /* not taken: still ours to free */
		} else {
			/* The helper keeps the job and its buffer, and ends with them; the next read starts another. */
			j->abandoned = 1;
			vr_helper = 0;
			j = NULL;
		}
		if (watchdog_stop_signal() && clock_mono_ns() < deadline) {
			e = EINTR;
		} else {
			e = ETIMEDOUT;
			vr_stuck = 1;
			warning("a read of %zu bytes of %d's memory at 0x%llx did not return in %d s: "
				"the target may have registered it with userfaultfd, or mapped a file "
				"of a FUSE mount that does not answer; no such read is tried again",
				n, (int)pid, (unsigned long long)addr, VMREAD_DEADLINE_MS / 1000);
		}
		goto out;
	}
	if (j->r == (ssize_t)n) {
		memcpy(buf, j->buf, n);
		r = 0;
	} else {
		e = j->r < 0 ? j->err : EFAULT;
	}
out:
	pthread_mutex_unlock(&vr_mu);
	pthread_mutex_unlock(&vr_caller);
	if (j) {
		free(j->buf);
		free(j);
	}
	if (r < 0)
		errno = e;
	return r;
}
