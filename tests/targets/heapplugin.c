/*
 * heapplugin — the library dlalloc dlopens: linked with jemalloc, it
 * allocates both through malloc (resolved in the global scope: the shim,
 * then the program's allocator) and through jemalloc's own mallocx and
 * dallocx, which stay private to it. Built as libheapplugin.so.
 */
#include <jemalloc/jemalloc.h>
#include <stdlib.h>
#include <string.h>

void *plugin_keep(int n);
void *plugin_churn(int n);

static void *kept[8192];

__attribute__((noinline)) void *plugin_keep(int n)
{
	for (int i = 0; i < n && i < 8192; i++) {
		kept[i] = malloc(8192);
		if (!kept[i])
			return NULL;
		memset(kept[i], 3, 64);
	}
	return kept;
}

/* n jemalloc-private blocks made and freed, then one malloc'ed block for the caller to free. */
__attribute__((noinline)) void *plugin_churn(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = mallocx(4096, 0);

		if (!p)
			return NULL;
		memset(p, 4, 64);
		dallocx(p, 0);
	}
	return malloc(1 << 16);
}
