/*
 * dlalloc — a test target that dlopens a library bringing its own
 * allocator (libheapplugin.so, linked with jemalloc), to be run with
 * LD_PRELOAD=libcprof.so. The plugin allocates with malloc (which the
 * shim interposes: the program's allocator) and with jemalloc's own
 * mallocx/dallocx (private to it); blocks it returns are freed here with
 * free().
 *
 *   plugin_keep   8000 x malloc(8192) in the plugin   65,536,000 bytes live
 *
 * Prints "ready PID" once done, then sleeps; exit 1 on any failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void *(*plugin_keep)(int), *(*plugin_churn)(int), *h;
	char path[4096];
	const char *dir = argc > 1 ? argv[1] : ".";

	snprintf(path, sizeof(path), "%s/libheapplugin.so", dir);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlalloc: %s\n", dlerror());
		return 1;
	}
	*(void **)&plugin_keep = dlsym(h, "plugin_keep");
	*(void **)&plugin_churn = dlsym(h, "plugin_churn");
	if (!plugin_keep || !plugin_churn || !plugin_keep(8000))
		return 1;
	/* Blocks the plugin malloc'ed, freed by the program: one allocator for both. */
	for (int i = 0; i < 100; i++)
		free(plugin_churn(1000));
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
