#ifndef CPROF_H
#define CPROF_H
/*
 * cprof.h — labels from inside the program, for cprof (cprof-attach and
 * its shim, libcprof.so). A thread says what it is working on, and every
 * sample cprof-attach takes of it (cpu, wall, threads) and every
 * allocation and wait the shim records on it carries those labels, as
 * pprof sample labels: `go tool pprof -tagfocus endpoint=/search`.
 *
 *     cprof_labels_push("endpoint", "/search", "tenant", t->name, NULL);
 *     serve(req);
 *     cprof_labels_pop();
 *
 * Invariants (what a program may rely on):
 *  - header only: a program links nothing for it. The functions look
 *    libcprof.so up once (dlsym) at their first call; without the shim
 *    every call is a no-op costing a load and a compare, so the calls can
 *    stay in production builds and the shim be preloaded only to profile;
 *  - labels are per thread; keys and values are strings, copied at the
 *    call (the caller's memory is not kept). A set holds at most 8 pairs,
 *    a key at most 31 bytes, a value at most 63: more is cut to fit and
 *    counted (cprof-attach reports it), never an error;
 *  - cprof_labels_push merges its pairs over the thread's current labels
 *    (a key already set takes the new value; a NULL value removes the
 *    key) and cprof_labels_pop restores the labels in force before the
 *    matching push; pushes nest (64 deep are remembered; a pop past them
 *    keeps the current labels, counted). cprof_labels_set replaces the
 *    thread's labels outright and cprof_labels_clear removes them; neither
 *    touches what a later pop restores;
 *  - a push costs ~150-220 ns with the shim on a virtual machine, most of
 *    it one clock read, a pop ~50-60 ns (bench/labels), the same with 32
 *    threads: no call takes a lock shared with other threads, except the
 *    first use of a label set never seen before in the process (a short
 *    leaf lock);
 *  - not async-signal-safe: do not change labels in a signal handler.
 *
 * Build with `pkg-config --cflags --libs cprof` (-ldl: dlsym, in libc
 * itself from glibc 2.34 on).
 */
#include <stdarg.h>
#include <stddef.h>
#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What libcprof.so exports (its ABI; the functions below call these). */
struct cprof__api {
	void (*vpush)(const char *, const char *, va_list);
	void (*vset)(const char *, const char *, va_list);
	void (*pop)(void);
	void (*clear)(void);
	int (*active)(void);
};

/* The shim's functions, looked up once; all NULL without the shim. */
static inline const struct cprof__api *cprof__resolve(void)
{
	static struct cprof__api api;
	static int resolved;
	void *h;

	if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE))
		return &api;
#ifdef RTLD_DEFAULT
	h = RTLD_DEFAULT;
#else
	h = (void *)0; /* glibc's RTLD_DEFAULT, when _GNU_SOURCE was not defined first */
#endif
	/* Only complete sets: all five, or none. */
	if (dlsym(h, "cprof_labels_vpush") && dlsym(h, "cprof_labels_vset") &&
	    dlsym(h, "cprof_labels_pop") && dlsym(h, "cprof_labels_clear") &&
	    dlsym(h, "cprof_labels_active")) {
		*(void **)&api.vpush = dlsym(h, "cprof_labels_vpush");
		*(void **)&api.vset = dlsym(h, "cprof_labels_vset");
		*(void **)&api.pop = dlsym(h, "cprof_labels_pop");
		*(void **)&api.clear = dlsym(h, "cprof_labels_clear");
		*(void **)&api.active = dlsym(h, "cprof_labels_active");
	}
	__atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
	return &api;
}

/*
 * Pushes key/value pairs, ended by a NULL key, merged over the calling
 * thread's current labels; cprof_labels_pop() restores what was in force
 * before. cprof_labels_push(NULL, NULL) pushes the labels unchanged.
 */
static inline void cprof_labels_push(const char *key, const char *value, ...)
{
	const struct cprof__api *a = cprof__resolve();
	va_list ap;

	if (!a->vpush)
		return;
	va_start(ap, value);
	a->vpush(key, value, ap);
	va_end(ap);
}

/* Restores the labels in force before the matching cprof_labels_push. */
static inline void cprof_labels_pop(void)
{
	const struct cprof__api *a = cprof__resolve();

	if (a->pop)
		a->pop();
}

/* Replaces the calling thread's labels with these pairs (NULL key ends them). */
static inline void cprof_labels_set(const char *key, const char *value, ...)
{
	const struct cprof__api *a = cprof__resolve();
	va_list ap;

	if (!a->vset)
		return;
	va_start(ap, value);
	a->vset(key, value, ap);
	va_end(ap);
}

/* Removes the calling thread's labels (a later pop still restores its push's). */
static inline void cprof_labels_clear(void)
{
	const struct cprof__api *a = cprof__resolve();

	if (a->clear)
		a->clear();
}

/* 1 when libcprof.so is loaded and records labels; 0 when the calls are no-ops. */
static inline int cprof_labels_active(void)
{
	const struct cprof__api *a = cprof__resolve();

	return a->active ? a->active() : 0;
}

#ifdef __cplusplus
}
#endif

#endif
