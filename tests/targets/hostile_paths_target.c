/*
 * hostile_paths_target — a target that names paths to trick a profiler
 * run as root into reading what it should not (tests/hostile/h_paths*.sh).
 * Run by an unprivileged attacker in its own user and mount namespace, it
 * spins in hostile_hot() (a function of its own, named only by a debug
 * file) or, with --jit, in code it generated, after setting its traps:
 *
 *   --jit LINK       code in an anonymous executable page, and its perf
 *                    map /tmp/perf-PID.map a symbolic link to LINK;
 *   --fifo FILE      FILE mapped, then deleted and replaced by a FIFO;
 *   --dev FILE       FILE mapped, then /dev/zero bind-mounted over it;
 *   --chroot DIR     all of that done inside DIR, its new root (after its
 *                    libraries are loaded; the perf map's link is made
 *                    there).
 *
 * Prints "ready PID ADDR" (ADDR the generated code's address, or 0) once
 * its traps are set.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

typedef uint64_t loop_fn(uint64_t n);

/* mov rax, rdi; loop: sub rax, 1; jnz loop; ret */
static const unsigned char leaf_code[] = { 0x48, 0x89, 0xf8, 0x48, 0x83, 0xe8, 0x01, 0x75, 0xfa, 0xc3 };

static volatile uint64_t sink;

void hostile_hot(uint64_t n);

__attribute__((noinline)) void hostile_hot(uint64_t n)
{
	uint64_t i, x = n;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

static void die(const char *what)
{
	fprintf(stderr, "hostile_paths_target: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Map path read-only (a file the profiler will want to read) and keep it mapped. */
static void map_file(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED)
		die(path);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *jit = NULL, *fifo = NULL, *dev = NULL, *root = NULL;
	unsigned char *code = NULL;
	loop_fn *hot = NULL;
	char map[64];
	int i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--jit"))
			jit = argv[i + 1];
		else if (!strcmp(argv[i], "--fifo"))
			fifo = argv[i + 1];
		else if (!strcmp(argv[i], "--dev"))
			dev = argv[i + 1];
		else if (!strcmp(argv[i], "--chroot"))
			root = argv[i + 1];
	}
	if (jit) {
		code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (code == MAP_FAILED)
			die("mmap");
		memset(code, 0xcc, 4096);
		memcpy(code + 0x40, leaf_code, sizeof(leaf_code));
		if (mprotect(code, 4096, PROT_READ | PROT_EXEC) < 0)
			die("mprotect");
		hot = (loop_fn *)(void *)(code + 0x40);
	}
	if (root && (chroot(root) < 0 || chdir("/") < 0))
		die(root);
	if (fifo) {
		map_file(fifo);
		if (unlink(fifo) < 0 || mkfifo(fifo, 0644) < 0)
			die(fifo);
	}
	if (dev) {
		map_file(dev);
		if (mount("/dev/zero", dev, NULL, MS_BIND, NULL) < 0)
			die(dev);
	}
	if (jit) {
		mkdir("/tmp", 01777);
		snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
		unlink(map);
		if (symlink(jit, map) < 0)
			die(map);
	}
	printf("ready %d %lx\n", (int)getpid(), (unsigned long)(uintptr_t)(code ? code + 0x40 : 0));
	fflush(stdout);
	for (;;) {
		if (hot)
			hot(400000000);
		else
			hostile_hot(100000000);
	}
}
