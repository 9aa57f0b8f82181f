/*
 * injectee — the shim's injection without ptrace: a program that loads
 * libcprof.so itself with dlopen (RTLD_LOCAL, as cprof-attach --inject
 * does) while 8 threads allocate and free at a high rate, each block
 * holding a pattern that is checked before its free (the checksum), then
 * arms and disarms it through cprof_inject_arm / cprof_inject_disarm
 * (dlsym) many times. Each window's heap, read from its own segment, must
 * be the blocks allocated since that arm (within a bound), whatever was
 * allocated before or freed while dormant; every block, from before or
 * after an arm, is freed through the program's own (restored) free.
 *
 *   injectee SHIM heap CYCLES   the cycles above; exit 0 when all held
 *   injectee SHIM hold          arm both families, keep 64 MiB in keep_inject, contend on a
 *                               mutex, wait on a semaphore; "ready"; wait to be killed
 *   injectee SHIM locks         arm the lock family; contend; MUTEX/BLOCK buckets
 *   injectee SHIM eject         arm, no reader: the shim disarms itself (> 10 s)
 *   injectee SHIM fork          arm, fork: the child's own segment, its frees fine
 *   injectee SHIM plugin LIB    arm, dlopen LIB: its slots patched, then restored
 *   injectee SHIM preloaded     (under LD_PRELOAD=SHIM) arm refused
 *   injectee SHIM seccomp       mprotect(PROT_WRITE) forbidden: arm refused, nothing patched
 *
 * Prints one line per check ("ok ..." / "FAIL ...") and "done" last.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim/segment.h"

#define WORKERS 8
#define RING 16
#define RATE 65536
#define BLOCK 2048

typedef int arm_fn(uint64_t, uint64_t, uint64_t, uint64_t);
typedef int disarm_fn(void);

static arm_fn *arm;
static disarm_fn *disarm;
static void *shim;
static volatile int stop;
static volatile uint64_t bad;      /* pattern mismatches: the checksum */
static volatile uint64_t worker_ops;
static int failures;

static void say(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 131 + i);
}

static int intact(const unsigned char *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed * 131 + i))
			return 0;
	return 1;
}

/* Allocates and frees small blocks in a ring, checking each before its free. */
static void *worker(void *arg)
{
	unsigned char *ring[RING] = { 0 };
	size_t size[RING] = { 0 };
	uint64_t seed[RING] = { 0 }, n = (uintptr_t)arg * 1000003u, ops = 0;

	while (!stop) {
		unsigned i = (unsigned)(n % RING);

		if (ring[i] != NULL) {
			if (!intact(ring[i], size[i], seed[i]))
				__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
			free(ring[i]);
		}
		size[i] = 16 + (n * 7919) % 496;
		seed[i] = n;
		ring[i] = (n & 3) == 0 ? calloc(1, size[i]) : malloc(size[i]);
		if (ring[i] == NULL)
			abort();
		fill(ring[i], size[i], seed[i]);
		n++;
		ops++;
	}
	for (unsigned i = 0; i < RING; i++) {
		if (ring[i] != NULL && !intact(ring[i], size[i], seed[i]))
			__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
		free(ring[i]);
	}
	__atomic_fetch_add(&worker_ops, ops, __ATOMIC_RELAXED);
	return NULL;
}

/* This process's segment (the newest one in its maps), or NULL. */
static struct seg_header *segment(void)
{
	char line[512];
	struct seg_header *h = NULL;
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo;

	if (f == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, "memfd:" SEG_NAME) != NULL && sscanf(line, "%lx-", &lo) == 1)
			h = (struct seg_header *)lo;
	fclose(f);
	if (h != NULL && memcmp(h->magic, SEG_MAGIC, 8) != 0)
		h = NULL;
	return h;
}

/* Estimated live bytes in ALLOC buckets; events in buckets of kind (BLOCK, MUTEX) into *waits. */
static double live(struct seg_header *h, uint32_t kind, double *waits)
{
	struct seg_bucket *b = (struct seg_bucket *)((char *)h + h->bucket_off);
	uint64_t i, n = __atomic_load_n(&h->bucket_count, __ATOMIC_ACQUIRE);
	double sum = 0;

	if (waits != NULL)
		*waits = 0;
	for (i = 0; i < n && i < h->bucket_cap; i++) {
		if (b[i].kind == SEG_KIND_ALLOC)
			sum += b[i].alloc_bytes - b[i].free_bytes;
		else if (b[i].kind == kind && waits != NULL)
			*waits += (double)b[i].wait.events;
	}
	return sum;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The heap kept after an arm: count blocks of BLOCK bytes, patterned. */
static __attribute__((noinline)) unsigned char **keep_inject(size_t count)
{
	unsigned char **v = calloc(count, sizeof(*v));
	size_t i;

	for (i = 0; i < count; i++) {
		v[i] = malloc(BLOCK);
		fill(v[i], BLOCK, i);
	}
	return v;
}

static size_t drop(unsigned char **v, size_t count)
{
	size_t i, broken = 0;

	for (i = 0; i < count; i++) {
		if (!intact(v[i], BLOCK, i))
			broken++;
		free(v[i]);
	}
	free(v);
	return broken;
}

/* Whether the program's GOT slot for malloc (its address, GLOB_DAT in a PIE) is the shim's. */
static int hooked(void)
{
	void *(*volatile m)(size_t) = malloc;

	return (void *)m == dlsym(shim, "malloc");
}

static int run_heap(int cycles)
{
	unsigned char **pre = keep_inject(4096); /* before any arm: freed untouched */
	uint64_t t0, c0, arm_ns = 0, arm_cpu = 0;
	int c, rc;

	for (c = 0; c < cycles; c++) {
		/*
		 * The first window 64 MiB (1024 samples expected: 15% is 4.8
		 * standard deviations), every 50th 32 MiB (512: 25% is 5.7), the
		 * others 4 MiB (64: 0.4x..2.5x holds but for 1 in 10^6; a stale
		 * window breaks it).
		 */
		size_t count = c == 0 ? (64u << 20) / BLOCK :
			       (c % 50 == 0) ? (32u << 20) / BLOCK : (4u << 20) / BLOCK;
		struct seg_header *h;
		unsigned char **v;
		double est, truth = (double)count * BLOCK;

		t0 = mono_ns();
		c0 = thread_ns();
		rc = arm(1, RATE, 0, 0);
		if (c == 0) {
			arm_ns = mono_ns() - t0;
			arm_cpu = thread_ns() - c0;
		}
		if (rc <= 0) {
			say(0, "cycle %d: arm returned %d: %s", c, rc,
			    (char *)dlsym(shim, "cprof_inject_why"));
			return 1;
		}
		if (!hooked())
			say(0, "cycle %d: armed but malloc's slot is not the shim's", c);
		if (c == 0) {
			/* Never called before: its lazy slot held the PLT stub at the arm. */
			void *p = valloc(100);

			say(p != NULL && ((uintptr_t)p & 4095) == 0, "a lazily bound slot patched: valloc");
			free(p);
		}
		v = keep_inject(count);
		h = segment();
		if (h == NULL) {
			say(0, "cycle %d: no segment", c);
			return 1;
		}
		__atomic_store_n(&h->reader_beat_ns, mono_ns(), __ATOMIC_RELEASE);
		est = live(h, 0, NULL);
		if (c == 0)
			say(est > truth * 0.85 && est < truth * 1.15,
			    "cycle %d: heap since arm %.0f bytes, truth %.0f (within 15%%), state %u, allocator %.64s",
			    c, est, truth, h->inject_state, h->allocator);
		else if (count == (32u << 20) / BLOCK)
			say(est > truth * 0.75 && est < truth * 1.25,
			    "cycle %d: heap since arm %.0f bytes, truth %.0f (within 25%%)", c, est, truth);
		else if (est < truth * 0.4 || est > truth * 2.5)
			say(0, "cycle %d: heap since arm %.0f bytes, truth %.0f (0.4x to 2.5x)", c, est,
			    truth);
		t0 = mono_ns();
		rc = disarm();
		if (c == 0)
			say(1, "first arm took %.0f us (%.0f us of its CPU: resolving, the segment, the "
			       "slots), its disarm %.0f us (%d slots)",
			    arm_ns / 1e3, arm_cpu / 1e3, (mono_ns() - t0) / 1e3, rc);
		if (rc <= 0 || hooked() || h->inject_state != SEG_INJECT_DORMANT)
			say(0, "cycle %d: disarm returned %d, hooked %d, state %u", c, rc, hooked(),
			    h->inject_state);
		if (drop(v, count) != 0)
			say(0, "cycle %d: a block kept across the arm was changed", c);
		if (c == 0) {
			/* Its stub restored: the next call binds it as the loader does. */
			void *p = valloc(100);

			say(p != NULL && ((uintptr_t)p & 4095) == 0, "the same slot restored, then bound");
			free(p);
		}
	}
	say(drop(pre, 4096) == 0, "blocks from before the first arm intact and freed");
	say(1, "%d arm/disarm cycles", cycles);
	return 0;
}

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t counter;

/* Takes the hot mutex over and over, as run_locks's threads do: contended releases and waits. */
static __attribute__((noinline)) void *contend_forever(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&hot);
		for (volatile int i = 0; i < 2000; i++)
			counter++;
		pthread_mutex_unlock(&hot);
	}
	return NULL;
}

static sem_t tick;

/* Waits for a tick, over and over: a wait of about 1 ms that always ends (the block profile). */
static __attribute__((noinline)) void *wait_forever(void *arg)
{
	(void)arg;
	for (;;)
		sem_wait(&tick);
	return NULL;
}

static void *tick_forever(void *arg)
{
	(void)arg;
	for (;;) {
		usleep(1000);
		sem_post(&tick);
	}
	return NULL;
}

/* Both families armed (the target's block and mutex settings), then held for cprof-attach. */
static int run_hold(void)
{
	int rc = arm(3, RATE, UINT64_MAX, UINT64_MAX), i;
	unsigned char **v;
	pthread_t t;

	if (rc <= 0) {
		say(0, "arm returned %d: %s", rc, (char *)dlsym(shim, "cprof_inject_why"));
		return 1;
	}
	for (i = 0; i < 4; i++)
		pthread_create(&t, NULL, contend_forever, NULL);
	sem_init(&tick, 0, 0);
	pthread_create(&t, NULL, wait_forever, NULL);
	pthread_create(&t, NULL, tick_forever, NULL);
	v = keep_inject((64u << 20) / BLOCK); /* 1024 samples expected: 15% is 4.8 standard deviations */
	printf("ready %d\n", rc);
	fflush(stdout);
	/*
	 * Until killed: the test reads the segment meanwhile. The beat stands
	 * in for the reader's (a cprof-attach without --inject does not
	 * beat), so that the shim does not eject itself between captures.
	 */
	for (;;) {
		struct seg_header *h = segment();

		if (h != NULL)
			__atomic_store_n(&h->reader_beat_ns, mono_ns(), __ATOMIC_RELEASE);
		sleep(1);
	}
	(void)v;
	return 0;
}

static __attribute__((noinline)) void *contend(void *arg)
{
	uint64_t end = mono_ns() + 2000000000u;

	(void)arg;
	while (mono_ns() < end) {
		pthread_mutex_lock(&hot);
		for (volatile int i = 0; i < 2000; i++)
			counter++;
		pthread_mutex_unlock(&hot);
	}
	return NULL;
}

static int run_locks(void)
{
	pthread_t t[4];
	struct seg_header *h;
	double block, mutex;
	int rc = arm(2, 0, 1000, 1), i;

	if (rc <= 0) {
		say(0, "arm returned %d: %s", rc, (char *)dlsym(shim, "cprof_inject_why"));
		return 1;
	}
	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, contend, NULL);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	h = segment();
	if (h == NULL) {
		say(0, "no segment");
		return 1;
	}
	live(h, SEG_KIND_BLOCK, &block);
	live(h, SEG_KIND_MUTEX, &mutex);
	say(block > 0, "block profile: %.0f sampled waits", block);
	say(mutex > 0, "mutex profile: %.0f sampled contended releases", mutex);
	rc = disarm();
	say(rc > 0, "disarm restored %d slots", rc);
	return 0;
}

static int run_eject(void)
{
	struct seg_header *h;
	unsigned char **v;
	int rc = arm(1, RATE, 0, 0);
	uint64_t end;

	if (rc <= 0) {
		say(0, "arm returned %d: %s", rc, (char *)dlsym(shim, "cprof_inject_why"));
		return 1;
	}
	h = segment();
	end = mono_ns() + 30000000000ull;
	sleep(11);
	while (h != NULL && h->inject_state == SEG_INJECT_ARMED && mono_ns() < end)
		drop(keep_inject(64), 64); /* sampled slow paths: one of them ejects */
	say(h != NULL && h->inject_state == SEG_INJECT_EJECTED && !hooked(),
	    "no reader for 10 s: the shim disarmed itself (state %u, hooked %d)",
	    h ? h->inject_state : 99, hooked());
	v = keep_inject(1024);
	say(drop(v, 1024) == 0, "allocations after the eject intact");
	return 0;
}

static int run_fork(void)
{
	unsigned char **v;
	int rc = arm(1, RATE, 0, 0), st;
	pid_t pid;

	if (rc <= 0) {
		say(0, "arm returned %d: %s", rc, (char *)dlsym(shim, "cprof_inject_why"));
		return 1;
	}
	v = keep_inject(4096);
	pid = fork();
	if (pid == 0) {
		struct seg_header *h = segment();
		unsigned char **w = keep_inject(8192);
		int ok = h != NULL && h->pid == (uint32_t)getpid() && hooked() &&
			 live(h, 0, NULL) > 8192.0 * BLOCK * 0.5;

		ok = ok && drop(w, 8192) == 0 && drop(v, 4096) == 0;
		_exit(ok ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	say(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "fork while armed: the child has its own segment, samples, frees every block");
	say(drop(v, 4096) == 0, "the parent's blocks intact");
	say(disarm() > 0, "parent disarms after the fork");
	/* Dormant: the child has no segment until it is armed itself. */
	pid = fork();
	if (pid == 0) {
		struct seg_header *h0 = segment(), *h;
		unsigned char **w;
		int ok = h0 == NULL && !hooked() && arm(1, RATE, 0, 0) > 0;

		h = segment();
		w = keep_inject(8192);
		ok = ok && h != NULL && h->pid == (uint32_t)getpid() &&
		     live(h, 0, NULL) > 8192.0 * BLOCK * 0.5 && live(h, 0, NULL) < 8192.0 * BLOCK * 2;
		ok = ok && disarm() > 0 && drop(w, 8192) == 0;
		_exit(ok ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	say(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "fork while dormant: no segment in the child until its own arm, then a fresh one");
	return 0;
}

/* A library loaded while armed is patched by the dlopen hook, and restored by the disarm. */
static int run_plugin(const char *path)
{
	void *(*addr)(void), *(*alloc)(size_t), **v, *lib;
	struct seg_header *h;
	size_t i, count = (64u << 20) / BLOCK; /* 1024 samples: 15% is 4.8 standard deviations */
	double est;
	int rc = arm(1, RATE, 0, 0);

	if (rc <= 0) {
		say(0, "arm returned %d: %s", rc, (char *)dlsym(shim, "cprof_inject_why"));
		return 1;
	}
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		say(0, "dlopen %s: %s", path, dlerror());
		return 1;
	}
	addr = (void *(*)(void))dlsym(lib, "injplugin_malloc_addr");
	alloc = (void *(*)(size_t))dlsym(lib, "injplugin_alloc");
	say(addr != NULL && addr() == dlsym(shim, "malloc"),
	    "a library loaded while armed has malloc's slot patched");
	v = malloc(count * sizeof(*v));
	for (i = 0; i < count; i++)
		v[i] = alloc(BLOCK);
	h = segment();
	est = h != NULL ? live(h, 0, NULL) : 0;
	say(est > count * BLOCK * 0.85 && est < count * BLOCK * 1.15,
	    "its allocations sampled: %.0f bytes, truth %zu (within 15%%)", est, count * BLOCK);
	rc = disarm();
	say(rc > 0 && addr() != dlsym(shim, "malloc"), "disarm restores its slot too (%d slots)", rc);
	for (i = 0; i < count; i++)
		free(v[i]);
	free(v);
	/*
	 * By bare name while armed, found through this program's RUNPATH:
	 * the hooked dlopen must reach the real one as called from here
	 * (its caller names the RUNPATH searched), not from the shim.
	 */
	rc = arm(1, RATE, 0, 0);
	{
		void *byname = dlopen("libinjplugin.so", RTLD_NOW | RTLD_LOCAL);

		say(rc > 0 && byname != NULL, "a bare name loads through the program's RUNPATH while armed%s%s",
		    byname ? "" : ": ", byname ? "" : dlerror());
		if (byname != NULL)
			dlclose(byname);
	}
	rc = disarm();
	/* Unloaded while armed: the disarm leaves its (unmapped) slots alone. */
	dlclose(lib);
	rc = arm(1, RATE, 0, 0);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	alloc = lib != NULL ? (void *(*)(size_t))dlsym(lib, "injplugin_alloc") : NULL;
	if (alloc != NULL)
		free(alloc(100));
	if (lib != NULL)
		dlclose(lib);
	say(rc > 0 && lib != NULL && disarm() > 0 && !hooked(),
	    "a library loaded and unloaded while armed: the disarm skips it");
	return 0;
}

/*
 * A policy that forbids making a page writable (seccomp: mprotect with
 * PROT_WRITE fails with EPERM): the arm is refused with the reason,
 * whatever it patched in writable pages is restored, the program runs on.
 */
static int run_seccomp(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_WRITE, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	const char *why = dlsym(shim, "cprof_inject_why");
	int rc;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		say(0, "seccomp: %s", strerror(errno));
		return 1;
	}
	rc = arm(1, RATE, 0, 0);
	say(rc == -EPERM && !hooked(), "mprotect forbidden: arm refused (%d: %s), nothing left patched",
	    rc, why ? why : "?");
	drop(keep_inject(4096), 4096);
	say(disarm() == 0, "disarm after a refused arm restores nothing");
	return 0;
}

/* Preloaded, the shim refuses to arm: it interposes already. */
static int run_preloaded(void)
{
	int rc = arm(1, RATE, 0, 0);
	const char *why = dlsym(shim, "cprof_inject_why");

	say(rc < 0 && why != NULL && strstr(why, "preloaded") != NULL,
	    "preloaded: arm refused (%d: %s)", rc, why ? why : "?");
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t[WORKERS];
	const char *mode = argc > 2 ? argv[2] : "heap";
	int i, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: injectee SHIM [heap CYCLES|hold|locks|eject|fork|plugin LIB|preloaded|seccomp]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	usleep(100000);
	shim = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (shim == NULL) {
		say(0, "dlopen: %s", dlerror());
		return 1;
	}
	arm = (arm_fn *)dlsym(shim, "cprof_inject_arm");
	disarm = (disarm_fn *)dlsym(shim, "cprof_inject_disarm");
	if (arm == NULL || disarm == NULL) {
		say(0, "no cprof_inject_arm/disarm in %s", argv[1]);
		return 1;
	}
	if (strcmp(mode, "heap") == 0)
		rc = run_heap(argc > 3 ? atoi(argv[3]) : 200);
	else if (strcmp(mode, "hold") == 0)
		rc = run_hold();
	else if (strcmp(mode, "locks") == 0)
		rc = run_locks();
	else if (strcmp(mode, "eject") == 0)
		rc = run_eject();
	else if (strcmp(mode, "fork") == 0)
		rc = run_fork();
	else if (strcmp(mode, "plugin") == 0 && argc > 3)
		rc = run_plugin(argv[3]);
	else if (strcmp(mode, "preloaded") == 0)
		rc = run_preloaded();
	else if (strcmp(mode, "seccomp") == 0)
		rc = run_seccomp();
	stop = 1;
	for (i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	say(bad == 0, "checksum: %llu worker blocks changed, %llu worker operations",
	    (unsigned long long)bad, (unsigned long long)worker_ops);
	printf("done\n");
	return rc != 0 || failures != 0;
}
