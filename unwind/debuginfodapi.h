#ifndef CPROF_DEBUGINFODAPI_H
#define CPROF_DEBUGINFODAPI_H
/*
 * debuginfodapi — the libdebuginfod functions debuginfo.c uses, loaded
 * on first use (common/dynlib.h) rather than linked: libdebuginfod brings
 * libcurl-gnutls and ~30 more libraries, and their start-up, to every run,
 * and is needed only when DEBUGINFOD_URLS is set and a debug file is not
 * found locally. <elfutils/debuginfod.h> (libdebuginfod-dev) still gives
 * the types. elfutils' own libdwfl loads it the same way.
 *
 * Invariants:
 *  - debuginfodapi_load() has returned 0 before any pointer of
 *    debuginfodapi is called through;
 *  - not thread-safe: debuginfo.c's one thread loads and uses it.
 */
#include <elfutils/debuginfod.h>

struct debuginfod_api {
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_end) *end;
	__typeof__(debuginfod_set_user_data) *set_user_data;
	__typeof__(debuginfod_get_user_data) *get_user_data;
	__typeof__(debuginfod_set_progressfn) *set_progressfn;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
};

extern struct debuginfod_api debuginfodapi;

/*
 * Load libdebuginfod (once) and fill debuginfodapi. 0, or -1 with *why
 * set to the reason (static storage); prints nothing.
 */
int debuginfodapi_load(const char **why);

#endif
