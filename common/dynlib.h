#ifndef CPROF_DYNLIB_H
#define CPROF_DYNLIB_H
/*
 * dynlib — a shared library loaded with dlopen(3) when a feature first
 * needs it, and its functions resolved into a table of pointers. For the
 * libraries only some runs use (libcurl for --push, libdebuginfod when
 * DEBUGINFOD_URLS is set): linked at start-up they brought 30 more
 * libraries and their relocations to every run, a snapshot included.
 *
 * Invariants:
 *  - a load is tried once: its outcome (and, on failure, the reason) is
 *    kept in the struct dynlib and given again to every later call;
 *  - on success every slot of the table is set; on failure none is used
 *    (the caller must not call through the table);
 *  - one thread at a time loads a given struct dynlib (each caller does
 *    so from the thread that owns the feature).
 */
#include <stddef.h>

/* One function to resolve: its name and where its address goes. */
struct dynlib_sym {
	const char *name;
	void **addr;
};

/* A library to load: its soname, its functions, and the load's outcome. */
struct dynlib {
	const char *soname;             /* "libcurl.so.4" */
	const struct dynlib_sym *syms;
	size_t nsyms;
	int state;                      /* 0 not tried, 1 loaded, -1 failed */
	char why[256];                  /* the failure, from dlerror() */
};

/*
 * Load l->soname and resolve every symbol, once. 0, or -1 with l->why
 * saying why (the library is missing, or lacks a function); prints
 * nothing: the caller names the feature that needed it.
 */
int dynlib_load(struct dynlib *l);

#endif
