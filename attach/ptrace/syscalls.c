/*
 * syscalls.c — the generated name table (build/gen/syscalls.h, one
 * designated initializer per __NR_ constant of the installed kernel
 * headers) and its bounds-checked lookup.
 */
#include <stddef.h>

#include "attach/ptrace/syscalls.h"

static const char *const names[] = {
#include "gen/syscalls.h"
};

const char *syscall_name(long nr)
{
	if (nr < 0 || (size_t)nr >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[nr];
}
