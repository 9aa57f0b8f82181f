/*
 * mallocext — a test target that uses glibc's malloc extensions while it
 * keeps a known live set, to be run with LD_PRELOAD=libcprof.so: mallopt,
 * malloc_trim, malloc_info, mallinfo2 and malloc_stats between
 * allocations, on whatever allocator the program is linked with.
 *
 *   keep_ext   16000 x malloc(4096)  65,536,000 bytes live
 *
 * It checks each block's contents after the calls (exit 1 on damage),
 * prints "ready PID" and then sleeps.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void keep_ext(void);

static void *kept[16000];

__attribute__((noinline)) void keep_ext(void)
{
	for (int i = 0; i < 16000; i++) {
		kept[i] = malloc(4096);
		if (!kept[i])
			exit(1);
		memset(kept[i], i & 0xff, 4096);
	}
}

int main(void)
{
	FILE *null = fopen("/dev/null", "w");
	struct mallinfo2 mi;
	void *churn[256];

	if (!null)
		return 1;
	(void)mallopt(M_ARENA_MAX, 2);
	(void)mallopt(M_TRIM_THRESHOLD, 1 << 20);
	(void)mallopt(M_MMAP_THRESHOLD, 256 << 10);
	keep_ext();
	for (int r = 0; r < 64; r++) {
		for (int i = 0; i < 256; i++)
			churn[i] = malloc((size_t)(i + 1) * 512);
		for (int i = 0; i < 256; i++)
			free(churn[i]);
		(void)malloc_trim(0);
	}
	if (malloc_info(0, null) != 0)
		return 1;
	mi = mallinfo2();
	(void)mi;
	fclose(null);
	for (int i = 0; i < 16000; i++)
		for (int j = 0; j < 4096; j += 512)
			if (((unsigned char *)kept[i])[j] != (i & 0xff))
				return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
