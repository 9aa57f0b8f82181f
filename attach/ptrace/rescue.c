/*
 * rescue.c — the watcher that breaks the seize/exec deadlock (rescue.h).
 * It costs a short wake-up every 20 ms during a capture, and a
 * read of /proc/PID/task only when a seize has been stuck for 20 ms,
 * which happens only while the target execs. It sleeps on a condition
 * variable, not in nanosleep, so that the end of a capture wakes it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "attach/ptrace/rescue.h"
#include "common/proc.h"

/* Whether thread tid of pid is a zombie ('Z' after the command's closing parenthesis). */
static int is_zombie(pid_t pid, pid_t tid)
{
	char p[64], buf[512], *q;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (proc_read(p, buf, sizeof(buf)) < 0 || !(q = strrchr(buf, ')')))
		return 0;
	return q[1] == ' ' && q[2] == 'Z';
}

/* Reap the target's zombie threads that are ours to reap. */
static void reap_zombies(struct rescue *r)
{
	char p[64];
	struct dirent *e;
	DIR *d;
	int status;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)r->pid);
	if (!(d = opendir(p)))
		return;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid > 0 && is_zombie(r->pid, tid) &&
		    waitpid(tid, &status, __WALL | WNOHANG) == tid)
			__atomic_add_fetch(&r->reaped, 1, __ATOMIC_RELAXED);
	}
	closedir(d);
}

static void *rescue_main(void *arg)
{
	struct rescue *r = arg;
	struct timespec ts;
	uint64_t since, at;

	pthread_mutex_lock(&r->lock);
	while (!r->stop) {
		at = clock_mono_ns() + RESCUE_POLL_NS;
		ts.tv_sec = (time_t)(at / 1000000000u);
		ts.tv_nsec = (long)(at % 1000000000u);
		pthread_cond_timedwait(&r->wake, &r->lock, &ts);
		if (r->stop)
			break;
		pthread_mutex_unlock(&r->lock);
		since = __atomic_load_n(&r->seize_since, __ATOMIC_ACQUIRE);
		if (since && clock_mono_ns() - since >= RESCUE_STUCK_NS)
			reap_zombies(r);
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int rescue_start(struct rescue *r, pid_t pid)
{
	pthread_condattr_t ca;

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	/* The deadline is on the monotonic clock, as clock_mono_ns() gives it. */
	if (pthread_condattr_init(&ca))
		return -1;
	if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(&r->wake, &ca)) {
		pthread_condattr_destroy(&ca);
		return -1;
	}
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&r->lock, NULL);
	if (pthread_create(&r->thread, NULL, rescue_main, r)) {
		pthread_cond_destroy(&r->wake);
		pthread_mutex_destroy(&r->lock);
		return -1;
	}
	r->started = 1;
	return 0;
}

void rescue_stop(struct rescue *r)
{
	if (!r->started)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = 1;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->wake);
	pthread_mutex_destroy(&r->lock);
	r->started = 0;
}

void rescue_enter(struct rescue *r)
{
	__atomic_store_n(&r->seize_since, clock_mono_ns(), __ATOMIC_RELEASE);
}

void rescue_leave(struct rescue *r)
{
	__atomic_store_n(&r->seize_since, 0, __ATOMIC_RELEASE);
}
