/*
 * injplugin — a library injectee dlopens while the shim is armed: its
 * allocations must be sampled (the shim's dlopen hook patched its GOT),
 * and its malloc slot must be restored by the disarm.
 */
#include <stdlib.h>

void *injplugin_malloc_addr(void);
void *injplugin_alloc(size_t n);

/* malloc's address as this library's GOT has it. */
void *injplugin_malloc_addr(void)
{
	void *(*volatile m)(size_t) = malloc;

	return (void *)m;
}

__attribute__((noinline)) void *injplugin_alloc(size_t n)
{
	return malloc(n);
}
