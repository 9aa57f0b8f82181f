/*
 * hostile_segment_forge — a plain process, not libcprof.so, that forges
 * the shim's segment (shim/segment.h) exactly where cprof-attach looks for
 * it: a memfd named "cprof-segment" mapped shared at offset 0. Its header
 * claims as much as the layout lets it: the most buckets a segment may
 * have, each valid with 64 distinct frames, of every kind (alloc, block,
 * mutex) and naming label sets; tens of thousands of label sets whose keys
 * collide with cprof's and Pyroscope's (service_name, __name__, __x, tid)
 * and whose strings fill their arrays without a NUL; tens of thousands of
 * label slots owned by threads that do not exist, each with a full ring
 * of distinct times, whose change counts the process bumps by a whole
 * ring every millisecond (by default), so that every read of them looks
 * like 256 new changes a thread.
 *
 * Usage: hostile_segment_forge [BUCKETS [SETS [SLOTS [THREADS [ALLOC [KIDS [BUMP_US]]]]]]]
 * (defaults 262144, 65536, 32768, 0, 0, 0, 1000): KIDS child processes, each
 * forging a segment of its own with return addresses of its own (for
 * --children); THREADS real threads (idle)
 * whose tids the first slots carry, so that their rings are taken as
 * real; ALLOC 1 makes every bucket an alloc bucket, 2 also puts every
 * frame in libc's code (a MiB from printf on), each distinct, 3 the
 * same over 128 KiB of libc (frames shared by many stacks), 4 puts the
 * label slots' offset past the segment's end (a header to refuse).
 * BUMP_US is how often every slot's changes are bumped (each process).
 * Prints "ready PID" and runs until killed; the memory it forges is its
 * own (shared memory it writes).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "../../shim/segment.h"

static uint64_t round_up(uint64_t n, uint64_t to)
{
	return (n + to - 1) / to * to;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t *tids;

static void *idle(void *arg)
{
	__atomic_store_n(&tids[(uintptr_t)arg], (uint32_t)gettid(), __ATOMIC_RELEASE);
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t nb = argc > 1 ? strtoull(argv[1], NULL, 0) : 262144;
	uint64_t ns = argc > 2 ? strtoull(argv[2], NULL, 0) : 65536;
	uint64_t nl = argc > 3 ? strtoull(argv[3], NULL, 0) : 32768;
	uint64_t nt = argc > 4 ? strtoull(argv[4], NULL, 0) : 0;
	int alloc_only = argc > 5 && atoi(argv[5]) >= 1;
	uint64_t text = argc > 5 && atoi(argv[5]) >= 2 ? (uint64_t)(uintptr_t)&printf : 0;
	uint64_t span = argc > 5 && atoi(argv[5]) == 3 ? 1u << 17 : 1u << 20;
	uint64_t kids = argc > 6 ? strtoull(argv[6], NULL, 0) : 0, k, me = 0;
	useconds_t bump_us = argc > 7 ? (useconds_t)strtoul(argv[7], NULL, 0) : 1000;
	pthread_attr_t attr;
	pthread_t th;
	static const char *const keys[] = { "service_name", "__name__", "__x", "tid", "endpoint" };
	static const uint32_t kinds[] = { SEG_KIND_ALLOC, SEG_KIND_BLOCK, SEG_KIND_MUTEX };
	uint64_t boff = round_up(sizeof(struct seg_header), 64);
	uint64_t soff = round_up(boff + nb * sizeof(struct seg_bucket), 64);
	uint64_t loff = round_up(soff + ns * sizeof(struct seg_labelset), 64);
	uint64_t size = round_up(loff + nl * sizeof(struct seg_lslot), 4096);
	uint64_t i, j, t0 = mono_ns();
	struct seg_header *h;
	struct seg_bucket *b;
	struct seg_labelset *s;
	struct seg_lslot *sl;
	int fd;

	/* The children first: each forges its own segment below, frames of its own. */
	for (k = 1; k <= kids; k++) {
		pid_t p = fork();

		if (p < 0)
			return perror("fork"), 1;
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			me = k;
			break;
		}
	}
	tids = calloc(nt + 1, sizeof(*tids));
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 65536);
	for (i = 0; i < nt; i++)
		if (pthread_create(&th, &attr, idle, (void *)(uintptr_t)i) != 0)
			return perror("pthread_create"), 1;
	for (i = 0; i < nt; i++)
		while (!__atomic_load_n(&tids[i], __ATOMIC_ACQUIRE))
			usleep(100);
	fd = memfd_create(SEG_NAME, 0);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
		return perror("memfd"), 1;
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		return perror("mmap"), 1;
	memcpy(h->magic, SEG_MAGIC, 8);
	h->version = SEG_VERSION;
	h->header_size = sizeof(*h);
	h->size = size;
	h->pid = (uint32_t)getpid();
	h->max_frames = SEG_MAX_FRAMES;
	h->bucket_size = sizeof(struct seg_bucket);
	h->sample_rate = 1;
	h->bucket_off = boff;
	h->bucket_cap = h->bucket_count = nb;
	h->block_rate = 1;
	h->mutex_fraction = 1;
	h->labelset_off = soff;
	h->labelset_cap = h->labelset_count = ns;
	h->lslot_off = loff;
	h->lslot_cap = h->lslot_count = nl;
	h->labelset_size = sizeof(struct seg_labelset);
	h->lslot_size = sizeof(struct seg_lslot);
	if (argc > 5 && atoi(argv[5]) == 4)
		h->lslot_off = size + 4096;
	memset(h->note, 'N', sizeof(h->note)); /* no NUL */
	memset(h->allocator, '\033', sizeof(h->allocator));
	for (i = 0; i < nb; i++) {
		b = (struct seg_bucket *)((char *)h + boff) + i;
		b->kind = alloc_only ? SEG_KIND_ALLOC : kinds[i % 3];
		b->nframes = SEG_MAX_FRAMES;
		b->labels = ns ? (uint32_t)(i % ns) + 1 : 0;
		b->hash = i;
		if (b->kind == SEG_KIND_ALLOC) {
			b->alloc_samples = b->alloc_sampled_bytes = 1 + i;
			b->alloc_objects = b->alloc_bytes = 1.0 + (double)i;
		} else {
			b->wait.events = b->wait.event_ns = 1 + i;
			b->wait.contentions = b->wait.delay_ns = 1.0 + (double)i;
		}
		for (j = 0; j < SEG_MAX_FRAMES; j++)
			b->frames[j] = text ? text + ((i * SEG_MAX_FRAMES + j) * 4) % span :
					      0x100000000ull + (me << 36) + (i * SEG_MAX_FRAMES + j) * 16;
	}
	for (i = 0; i < ns; i++) {
		s = (struct seg_labelset *)((char *)h + soff) + i;
		s->n = SEG_LABEL_PAIRS;
		s->hash = i;
		for (j = 0; j < SEG_LABEL_PAIRS; j++) {
			memset(s->pair[j].key, 'k', sizeof(s->pair[j].key));
			memset(s->pair[j].value, 'v', sizeof(s->pair[j].value));
			if (j < sizeof(keys) / sizeof(keys[0]))
				snprintf(s->pair[j].key, sizeof(s->pair[j].key), "%s", keys[j]);
			else
				s->pair[j].key[0] = (char)('a' + j);
			/* No NUL before the array's end. */
			memcpy(s->pair[j].value, &i, sizeof(i));
			s->pair[j].value[0] = 'v';
		}
	}
	for (i = 0; i < nl; i++) {
		sl = (struct seg_lslot *)((char *)h + loff) + i;
		/* Its own threads' tids, then threads that do not exist. */
		sl->tid = i < nt ? tids[i] : 4000000u - (uint32_t)i;
		sl->state = SEG_LSLOT_LIVE;
		for (j = 0; j < SEG_LABEL_RING; j++) {
			sl->ring[j].ns = t0 - 1000000000ull + j;
			sl->ring[j].set = ns ? (uint32_t)((i + j) % ns) + 1 : 0;
		}
		sl->changes = SEG_LABEL_RING;
		sl->cur = sl->ring[SEG_LABEL_RING - 1].set;
	}
	if (!me) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
	}
	for (;;) {
		/* A whole ring of new changes in every slot, every bump_us. */
		for (i = 0; i < nl; i++) {
			sl = (struct seg_lslot *)((char *)h + loff) + i;
			__atomic_store_n(&sl->changes, sl->changes + SEG_LABEL_RING, __ATOMIC_RELEASE);
		}
		usleep(bump_us);
	}
}
