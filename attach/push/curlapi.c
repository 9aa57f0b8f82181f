/*
 * curlapi.c — libcurl's functions, resolved from libcurl.so.4 (the soname
 * of Debian's libcurl4, which libcurl4-openssl-dev links against) the
 * first time --push needs them (curlapi.h).
 */
#include "attach/push/curlapi.h"
#include "common/dynlib.h"
#include "common/err.h"

#define CURL_SONAME "libcurl.so.4"

struct curl_api curlapi;

#define SYM(f) { "curl_" #f, (void **)&curlapi.f }
static const struct dynlib_sym curl_syms[] = {
	SYM(global_init),  SYM(free),          SYM(url),           SYM(url_dup),
	SYM(url_set),      SYM(url_get),       SYM(url_cleanup),   SYM(slist_append),
	SYM(slist_free_all), SYM(easy_init),   SYM(easy_reset),    SYM(easy_setopt),
	SYM(easy_perform), SYM(easy_getinfo),  SYM(easy_strerror), SYM(easy_cleanup),
	SYM(mime_init),    SYM(mime_addpart),  SYM(mime_name),     SYM(mime_filename),
	SYM(mime_type),    SYM(mime_data),     SYM(mime_free),
};
#undef SYM

static struct dynlib curl_lib = {
	.soname = CURL_SONAME,
	.syms = curl_syms,
	.nsyms = sizeof(curl_syms) / sizeof(curl_syms[0]),
};

int curlapi_load(void)
{
	if (dynlib_load(&curl_lib) < 0)
		return error("--push needs libcurl: %s", curl_lib.why);
	return 0;
}
