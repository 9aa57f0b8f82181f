/*
 * demangle.c — __cxa_demangle from the C++ runtime (libstdc++), the
 * demangler GCC's own tools use; a hand-written one would be the largest
 * file in the project and wrong in corners. The runtime allocates the
 * result with malloc; it is copied out and freed at once.
 */
#include <stdlib.h>
#include <string.h>

#include "unwind/demangle.h"

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

const char *demangle(const char *name, char *out, size_t cap)
{
	char *d;
	size_t n;
	int status = -1;

	if (cap == 0 || strncmp(name, "_Z", 2) != 0 || strnlen(name, DEMANGLE_MAX_IN + 1) > DEMANGLE_MAX_IN)
		return name;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d || status != 0) {
		free(d);
		return name;
	}
	n = strlen(d);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, d, n);
	out[n] = 0;
	free(d);
	return out;
}
