/*
 * queue.c — a mutex-and-condvar FIFO of snapshots. Samples arrive at most a
 * few thousand per second, so a lock per push costs nothing measurable;
 * what matters is that a push never blocks the tracer.
 */
#include <stdlib.h>
#include <time.h>

#include "attach/ptrace/snapshot.h"

/* The stack bytes a snapshot holds, over all its regions (at most the cap). */
static size_t snapshot_bytes(const struct snapshot *s)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < s->img.nstacks && i < IMAGE_MAX_REGIONS; i++)
		n += s->img.stack[i].len;
	return n;
}

int queue_init(struct queue *q)
{
	q->head = q->tail = NULL;
	q->items = q->bytes = 0;
	q->closed = 0;
	q->producers = 1;
	if (pthread_mutex_init(&q->lock, NULL))
		return -1;
	if (pthread_cond_init(&q->cond, NULL)) {
		pthread_mutex_destroy(&q->lock);
		return -1;
	}
	return 0;
}

void queue_release(struct queue *q)
{
	struct snapshot *s, *n;

	for (s = q->head; s; s = n) {
		n = s->next;
		snapshot_free(s);
	}
	q->head = q->tail = NULL;
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
}

int queue_push(struct queue *q, struct snapshot *s)
{
	int r = -1;

	pthread_mutex_lock(&q->lock);
	if (!q->closed && q->items < QUEUE_MAX_ITEMS &&
	    q->bytes + snapshot_bytes(s) <= QUEUE_MAX_BYTES) {
		s->next = NULL;
		if (q->tail)
			q->tail->next = s;
		else
			q->head = s;
		q->tail = s;
		q->items++;
		q->bytes += snapshot_bytes(s);
		pthread_cond_signal(&q->cond);
		r = 0;
	}
	pthread_mutex_unlock(&q->lock);
	return r;
}

/* Unlink the head (the caller holds the lock). */
static struct snapshot *queue_take(struct queue *q)
{
	struct snapshot *s = q->head;

	if (s) {
		q->head = s->next;
		if (!q->head)
			q->tail = NULL;
		q->items--;
		q->bytes -= snapshot_bytes(s);
	}
	return s;
}

struct snapshot *queue_pop(struct queue *q)
{
	struct snapshot *s;

	pthread_mutex_lock(&q->lock);
	while (!q->head && !q->closed)
		pthread_cond_wait(&q->cond, &q->lock);
	s = queue_take(q);
	pthread_mutex_unlock(&q->lock);
	return s;
}

struct snapshot *queue_pop_timed(struct queue *q, unsigned ms, int *closed)
{
	struct snapshot *s;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&q->lock);
	while (!q->head && !q->closed)
		if (pthread_cond_timedwait(&q->cond, &q->lock, &until) != 0)
			break;
	s = queue_take(q);
	*closed = !s && q->closed;
	pthread_mutex_unlock(&q->lock);
	return s;
}

int queue_closed(struct queue *q)
{
	int c;

	pthread_mutex_lock(&q->lock);
	c = q->closed;
	pthread_mutex_unlock(&q->lock);
	return c;
}

int queue_add_producer(struct queue *q)
{
	int r = -1;

	pthread_mutex_lock(&q->lock);
	if (!q->closed) {
		q->producers++;
		r = 0;
	}
	pthread_mutex_unlock(&q->lock);
	return r;
}

void queue_close(struct queue *q)
{
	pthread_mutex_lock(&q->lock);
	if (--q->producers <= 0) {
		q->closed = 1;
		pthread_cond_broadcast(&q->cond);
	}
	pthread_mutex_unlock(&q->lock);
}

void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	free(s->stack);
	free(s->kstack);
	free(s);
}
