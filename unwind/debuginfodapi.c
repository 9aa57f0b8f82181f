/*
 * debuginfodapi.c — libdebuginfod's functions, resolved from
 * libdebuginfod.so.1 (Debian's libdebuginfod1) the first time a debug
 * file is asked of a server (debuginfodapi.h).
 */
#include "common/dynlib.h"
#include "unwind/debuginfodapi.h"

#define DEBUGINFOD_SONAME "libdebuginfod.so.1"

struct debuginfod_api debuginfodapi;

#define SYM(f) { "debuginfod_" #f, (void **)&debuginfodapi.f }
static const struct dynlib_sym debuginfod_syms[] = {
	SYM(begin), SYM(end), SYM(set_user_data), SYM(get_user_data), SYM(set_progressfn),
	SYM(find_debuginfo),
};
#undef SYM

static struct dynlib debuginfod_lib = {
	.soname = DEBUGINFOD_SONAME,
	.syms = debuginfod_syms,
	.nsyms = sizeof(debuginfod_syms) / sizeof(debuginfod_syms[0]),
};

int debuginfodapi_load(const char **why)
{
	if (dynlib_load(&debuginfod_lib) < 0) {
		*why = debuginfod_lib.why;
		return -1;
	}
	return 0;
}
