/*
 * arena.c — chunked bump allocation for the model. Interning a million
 * stacks with malloc would cost a million allocations and their headers;
 * here it costs one 64 KiB chunk per few hundred stacks. Nothing is freed
 * until the whole profile is, which matches how a profile lives: it only
 * grows until it is written. Large requests get a chunk of their own so the
 * chunk being filled is not abandoned half empty.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#include "model/arena.h"

#define ARENA_CHUNK ((size_t)64 * 1024)
#define ARENA_ALIGN (alignof(max_align_t))

struct arena_chunk {
	struct arena_chunk *next;
	size_t cap, used;
	max_align_t data[];
};

void arena_init(struct arena *a, size_t limit)
{
	a->head = NULL;
	a->total = 0;
	a->limit = limit;
}

void arena_release(struct arena *a)
{
	struct arena_chunk *c = a->head;

	while (c) {
		struct arena_chunk *next = c->next;

		free(c);
		c = next;
	}
	arena_init(a, a->limit);
}

static struct arena_chunk *arena_chunk_new(struct arena *a, size_t cap)
{
	struct arena_chunk *c;

	if (cap > a->limit - a->total || cap > SIZE_MAX - sizeof(*c)) {
		errno = EFBIG;
		return NULL;
	}
	c = malloc(sizeof(*c) + cap);
	if (!c)
		return NULL;
	c->next = NULL;
	c->cap = cap;
	c->used = 0;
	a->total += cap;
	return c;
}

void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_chunk *c = a->head;
	size_t need;

	if (n == 0 || n > SIZE_MAX - ARENA_ALIGN) {
		errno = EINVAL;
		return NULL;
	}
	need = (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
	if (c && c->cap - c->used >= need) {
		c->used += need;
		return (unsigned char *)c->data + c->used - need;
	}
	if (need > ARENA_CHUNK / 4) {
		/* A chunk of its own, behind the head, which stays in use. */
		struct arena_chunk *big = arena_chunk_new(a, need);

		if (!big)
			return NULL;
		big->used = need;
		if (c) {
			big->next = c->next;
			c->next = big;
		} else {
			a->head = big;
		}
		return big->data;
	}
	c = arena_chunk_new(a, ARENA_CHUNK);
	if (!c)
		return NULL;
	c->next = a->head;
	a->head = c;
	c->used = need;
	return c->data;
}
