/*
 * thread.c — the interposed pthread_create: records every call, sampled or
 * not and whatever CPROF_SAMPLE_RATE says, in a SEG_KIND_THREAD bucket at
 * the creating stack (alloc_samples and alloc_objects += 1) and in
 * header.threads_created, then calls glibc's pthread_create. The first
 * call also looks up the real lock functions (shim/locknext.h). Cost: one
 * unwind and one bucket update per thread creation, small next to the
 * mmap and clone a new thread costs anyway.
 */
#include <errno.h>
#include <pthread.h>

#include "shim/labels.h"
#include "shim/locknext.h"
#include "shim/segment.h"
#include "shim/shim.h"
#include "shim/stack.h"
#include "shim/table.h"

static void shim_thread_record(void)
{
	struct shim_thread *t = &shim_tls;
	uint64_t frames[SEG_MAX_FRAMES];
	uint32_t flags, n;
	int32_t b;

	if (t->busy || __atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) != SHIM_READY ||
	    !shim_activate())
		return;
	t->busy++;
	n = stack_capture(frames, SEG_MAX_FRAMES, &flags);
	b = table_bucket_labeled(SEG_KIND_THREAD, flags, labels_current(), frames, n);
	if (b >= 0)
		table_add(b, 0, 0, 1.0);
	table_count_thread();
	t->busy--;
}

SHIM_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			       void *arg)
{
	shim_pthread_create_fn real = shim_real_pthread_create();

	if (real == NULL)
		return EAGAIN; /* cannot happen with glibc; never crash */
	/* While this is the only thread, the first time: no lookup later under a program lock. */
	locknext_resolve_all();
	shim_thread_record();
	return real(th, attr, fn, arg);
}
