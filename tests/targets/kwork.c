/*
 * kwork — a test target whose CPU is mostly the kernel's: a "writer"
 * thread writes 4 KiB blocks to a pipe in pipe_writer(), a "reader"
 * thread drains it in pipe_reader(), and with a FILE argument a "syncer"
 * thread rewrites 4 KiB of FILE and fdatasyncs it in file_syncer(). For
 * kernel frames in CPU profiles: their stacks go on below write, read and
 * fdatasync into the kernel.
 * Usage: kwork [FILE]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fds[2];
static char block[4096];

void pipe_writer(void);
void pipe_reader(void);
void file_syncer(const char *path);

__attribute__((noinline)) void pipe_writer(void)
{
	for (;;)
		if (write(fds[1], block, sizeof(block)) < 0)
			return;
}

__attribute__((noinline)) void pipe_reader(void)
{
	char buf[65536];

	for (;;)
		if (read(fds[0], buf, sizeof(buf)) <= 0)
			return;
}

__attribute__((noinline)) void file_syncer(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return;
	for (;;) {
		if (pwrite(fd, block, sizeof(block), 0) < 0 || fdatasync(fd) < 0)
			return;
	}
}

static void *writer_main(void *a)
{
	(void)a;
	pthread_setname_np(pthread_self(), "writer");
	pipe_writer();
	return NULL;
}

static void *reader_main(void *a)
{
	(void)a;
	pthread_setname_np(pthread_self(), "reader");
	pipe_reader();
	return NULL;
}

static void *syncer_main(void *a)
{
	pthread_setname_np(pthread_self(), "syncer");
	file_syncer(a);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[3];

	memset(block, 'x', sizeof(block));
	if (pipe(fds) < 0)
		return 1;
	pthread_create(&t[0], NULL, writer_main, NULL);
	pthread_create(&t[1], NULL, reader_main, NULL);
	if (argc > 1)
		pthread_create(&t[2], NULL, syncer_main, argv[1]);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	pause();
	return 0;
}
