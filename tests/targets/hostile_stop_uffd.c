/*
 * hostile_stop_uffd — a target whose memory never answers a read: pages
 * registered with userfaultfd (missing-page mode) whose faults it never
 * resolves, so that a process_vm_readv of them waits in the kernel for
 * ever. A spinning thread shows that the target itself runs on.
 *
 *   segment [-u]  a fake libcprof.so segment (a memfd named like the
 *                 shim's, mapped shared, never touched) registered with
 *                 userfaultfd: cprof-attach -t heap reads its header.
 *   stack [-u]    a thread asleep in pause() whose stack pages are dropped
 *                 (MADV_DONTNEED) and registered: the ptrace sampler reads
 *                 a sleeping thread's stack without stopping it.
 *   hole          a thread spinning under a 16 KiB frame used at its low
 *                 end only (tests/targets/holeyframe), one untouched page
 *                 of which is registered: a perf sample's stack copy ends
 *                 below it, and the rest is read from memory
 *                 (attach/perf/stackhole.h).
 *
 * -u asks for a user-mode-only userfaultfd (UFFD_USER_MODE_ONLY), the
 * only kind an unprivileged user gets when vm.unprivileged_userfaultfd is
 * 0: its faults block user-mode accesses only, so a kernel read (the
 * profiler's) fails at once instead of waiting. Prints "ready PID" when
 * set up, "uffd: ..." on failure (then exits 3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define SEG_BYTES (1u << 20)
#define STACK_BYTES (256u << 10)

static volatile unsigned long spins;

static void *spin_main(void *arg)
{
	(void)arg;
	for (;;)
		spins++;
	return NULL;
}

static volatile char *volatile hole_buf; /* the hole thread's frame, once it spins */

/* A 16 KiB frame written at its low end only; its pages above stay untouched. */
__attribute__((noinline)) static void hole_frame(void)
{
	volatile char buf[16 * 1024];
	int i;

	for (i = 0; i < 64; i++)
		buf[i] = (char)i;
	hole_buf = buf;
	for (;;)
		spins += (unsigned long)buf[spins & 63];
}

static void *hole_main(void *arg)
{
	(void)arg;
	hole_frame();
	return NULL;
}

static void *sleeper_main(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static int uffd_register(void *addr, size_t len, int user_only)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	int fd;

	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | (user_only ? UFFD_USER_MODE_ONLY : 0));
	if (fd < 0) {
		printf("uffd: userfaultfd: %s\n", strerror(errno));
		return -1;
	}
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		printf("uffd: UFFDIO_API: %s\n", strerror(errno));
		return -1;
	}
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)addr;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(fd, UFFDIO_REGISTER, &reg) < 0) {
		printf("uffd: UFFDIO_REGISTER: %s\n", strerror(errno));
		return -1;
	}
	return fd; /* kept open, never read: every fault waits for ever */
}

int main(int argc, char **argv)
{
	pthread_t th;
	pthread_attr_t a;
	int user_only = argc > 2 && strcmp(argv[2], "-u") == 0, fd;
	void *p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: hostile_stop_uffd segment|stack|hole [-u]\n");
		return 2;
	}
	pthread_create(&th, NULL, spin_main, NULL);
	if (strcmp(argv[1], "segment") == 0) {
		fd = memfd_create("cprof-segment", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, SEG_BYTES) < 0)
			return 3;
		p = mmap(NULL, SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return 3;
		if (uffd_register(p, SEG_BYTES, user_only) < 0)
			return 3;
	} else if (strcmp(argv[1], "hole") == 0) {
		uintptr_t page;

		p = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 3;
		pthread_attr_init(&a);
		pthread_attr_setstack(&a, p, STACK_BYTES);
		pthread_create(&th, &a, hole_main, NULL);
		while (!hole_buf)
			usleep(1000);
		/* A page inside the frame, above its used low end: never touched. */
		page = ((uintptr_t)hole_buf + 8192) & ~(uintptr_t)4095;
		if (uffd_register((void *)page, 4096, user_only) < 0)
			return 3;
	} else {
		p = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 3;
		pthread_attr_init(&a);
		pthread_attr_setstack(&a, p, STACK_BYTES);
		pthread_create(&th, &a, sleeper_main, NULL);
		usleep(200000); /* asleep in pause() */
		/* Its stack gone and registered: it never wakes, and a read of it waits. */
		madvise(p, STACK_BYTES, MADV_DONTNEED);
		if (uffd_register(p, STACK_BYTES, user_only) < 0)
			return 3;
	}
	printf("ready %d\n", (int)getpid());
	for (;;)
		pause();
}
