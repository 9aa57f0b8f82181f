#ifndef CPROF_CURLAPI_H
#define CPROF_CURLAPI_H
/*
 * curlapi — the libcurl functions --push uses, loaded on first use
 * (common/dynlib.h) rather than linked: libcurl and the ~30 libraries it
 * needs would add their start-up to every run, a snapshot included, and
 * only --push speaks HTTP. <curl/curl.h> (libcurl4-openssl-dev) still
 * gives the types; the pointers carry its exact prototypes.
 *
 * Invariants:
 *  - curlapi_load() is called, and has returned 0, before any pointer of
 *    curlapi is called through;
 *  - it runs on the main thread before any other starts (curl_global_init
 *    must, request.h); it prints the one error line itself.
 */
#include <curl/curl.h>

struct curl_api {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_free) *free;
	__typeof__(curl_url) *url;
	__typeof__(curl_url_dup) *url_dup;
	__typeof__(curl_url_set) *url_set;
	__typeof__(curl_url_get) *url_get;
	__typeof__(curl_url_cleanup) *url_cleanup;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_reset) *easy_reset;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_mime_init) *mime_init;
	__typeof__(curl_mime_addpart) *mime_addpart;
	__typeof__(curl_mime_name) *mime_name;
	__typeof__(curl_mime_filename) *mime_filename;
	__typeof__(curl_mime_type) *mime_type;
	__typeof__(curl_mime_data) *mime_data;
	__typeof__(curl_mime_free) *mime_free;
};

extern struct curl_api curlapi;

/*
 * Load libcurl (once) and fill curlapi. 0, or -1 after printing
 * "--push needs libcurl: WHY" (the caller exits with EXIT_USAGE).
 */
int curlapi_load(void);

#endif
