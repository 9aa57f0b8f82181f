/*
 * dynlib.c — dlopen(3) and dlsym(3) over a table (dynlib.h). RTLD_LAZY:
 * only the functions called are bound; RTLD_LOCAL: nothing of the library
 * leaks into later lookups. The handle is never closed, as libraries
 * such as libcurl keep global state for the whole process.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "common/dynlib.h"

int dynlib_load(struct dynlib *l)
{
	const char *e;
	void *h, *p;
	size_t i;

	if (l->state)
		return l->state > 0 ? 0 : -1;
	l->state = -1;
	if (!(h = dlopen(l->soname, RTLD_LAZY | RTLD_LOCAL))) {
		e = dlerror();
		snprintf(l->why, sizeof(l->why), "%s", e ? e : l->soname);
		return -1;
	}
	for (i = 0; i < l->nsyms; i++) {
		dlerror();
		if (!(p = dlsym(h, l->syms[i].name))) {
			snprintf(l->why, sizeof(l->why), "%s lacks %s", l->soname, l->syms[i].name);
			dlclose(h);
			return -1;
		}
		*l->syms[i].addr = p;
	}
	l->state = 1;
	return 0;
}
