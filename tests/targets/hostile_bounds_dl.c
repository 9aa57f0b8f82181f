/*
 * hostile_bounds_dl — a target that loads shared objects its owner crafted
 * and runs their code, for the hostile tests of bounded decoding
 * (tests/hostile/h_bounds*.sh). Each object exports bounds_work(n), which
 * spins n rounds in a static (unexported) function; one thread calls them
 * all in turn, so every object has samples. The first object can then be
 * truncated under cprof, with the part its loaded segments need kept so
 * that the target itself runs on:
 *   run           only run the objects;
 *   trunc-before  truncate to KEEP bytes before saying ready;
 *   trunc-during  say ready, wait until someone else opens the object
 *                 (inotify), then truncate it 300 ms later;
 *   trunc-loop    say ready, then truncate and restore it every 2 ms.
 * Usage: hostile_bounds_dl MODE KEEP OBJECT...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_OBJS 64

typedef void (*work_fn)(unsigned);

static work_fn fns[MAX_OBJS];
static int nfns;

static void *worker(void *arg)
{
	int i;

	(void)arg;
	for (;;)
		for (i = 0; i < nfns; i++)
			fns[i](20000);
	return NULL;
}

int main(int argc, char **argv)
{
	char ev[4096] __attribute__((aligned(8)));
	const char *mode;
	struct stat st;
	unsigned char *copy = NULL;
	pthread_t t;
	off_t keep;
	int i, fd = -1, in = -1;

	if (argc < 4) {
		fprintf(stderr, "usage: %s MODE KEEP OBJECT...\n", argv[0]);
		return 2;
	}
	mode = argv[1];
	keep = (off_t)strtoull(argv[2], NULL, 0);
	for (i = 3; i < argc && nfns < MAX_OBJS; i++) {
		void *h = dlopen(argv[i], RTLD_NOW);

		if (!h || !(fns[nfns] = (work_fn)dlsym(h, "bounds_work"))) {
			fprintf(stderr, "%s: %s\n", argv[i], dlerror());
			return 1;
		}
		nfns++;
	}
	if (strncmp(mode, "trunc-", 6) == 0) {
		fd = open(argv[3], O_RDWR);
		if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= keep) {
			perror(argv[3]);
			return 1;
		}
		copy = malloc((size_t)st.st_size);
		if (!copy || pread(fd, copy, (size_t)st.st_size, 0) != st.st_size) {
			perror("read");
			return 1;
		}
	}
	pthread_create(&t, NULL, worker, NULL);
	if (!strcmp(mode, "trunc-before") && ftruncate(fd, keep) < 0) {
		perror("ftruncate");
		return 1;
	}
	if (!strcmp(mode, "trunc-during")) {
		in = inotify_init1(IN_CLOEXEC);
		if (in < 0 || inotify_add_watch(in, argv[3], IN_OPEN) < 0) {
			perror("inotify");
			return 1;
		}
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(mode, "trunc-during")) {
		if (read(in, ev, sizeof(ev)) <= 0)
			return 1;
		usleep(300000);
		if (ftruncate(fd, keep) < 0)
			return 1;
		printf("truncated\n");
		fflush(stdout);
	}
	if (!strcmp(mode, "trunc-loop")) {
		for (;;) {
			if (ftruncate(fd, keep) < 0)
				return 1;
			usleep(2000);
			if (pwrite(fd, copy + keep, (size_t)(st.st_size - keep), keep) < 0)
				return 1;
			usleep(2000);
		}
	}
	for (;;)
		pause();
}
