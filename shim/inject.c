/*
 * inject.c — arming and disarming a shim that was dlopen'd into a running
 * process (inject.h; doc/inject.md). The arm resolves every real
 * function first (dlsym(RTLD_DEFAULT): the program's first global
 * definition, jemalloc's in a jemalloc-linked program), activates the
 * segment, then rewrites the GOT slots (shim/got.h); the disarm puts them
 * back and leaves nothing of the shim reachable from the program's code.
 * The shim's own functions are found by dlsym on its own handle (the
 * object itself is searched first), since a reference from inside the
 * shim to "malloc" binds to the program's. Both calls are made by
 * cprof-attach on one stopped thread: no stdio, no allocation, no lock
 * but the loader's (dlsym, dladdr, dl_iterate_phdr) and the shim's own
 * try-lock; they store their result in cprof_inject_result before
 * counting cprof_inject_calls, for a caller that cannot read rax.
 */
#include "shim/inject.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "shim/blocks.h"
#include "shim/got.h"
#include "shim/locknext.h"
#include "shim/lockprof.h"
#include "shim/next.h"
#include "shim/segment.h"
#include "shim/table.h"

SHIM_EXPORT char cprof_inject_why[256];
SHIM_EXPORT int cprof_inject_result;
SHIM_EXPORT uint64_t cprof_inject_calls;

int shim_late;
int inject_armed;

static int inject_lock;              /* try-lock around arm, disarm, the dlopen patch */
static uint32_t inject_state_v;      /* SEG_INJECT_* */
static uint64_t inject_flags;        /* CPROF_INJECT_* of the armed families */
static uint64_t inject_ns;           /* CLOCK_REALTIME of the last arm */
static uint64_t inject_mono;         /* CLOCK_MONOTONIC of the last arm (or fork) */
static int inject_resolved;          /* the real functions and the shim's own are known */
static uint64_t inject_env_rate;     /* CPROF_SAMPLE_RATE (or its default) as the constructor read it */
static uint64_t inject_env_block, inject_env_fraction;

/* Read by the dlopen entries' assembly (below): hidden, not static. */
void *(*inject_real_dlopen)(const char *, int) SHIM_HIDDEN;
void *(*inject_real_dlmopen)(Lmid_t, const char *, int) SHIM_HIDDEN;

/* The hooked functions: name and the shim's own function (filled at the first arm). */
static const char *const inject_heap_names[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "aligned_alloc",
	"posix_memalign", "valloc", "pvalloc", "malloc_usable_size", "free_sized",
	"free_aligned_sized",
};
static const char *const inject_lock_names[] = {
	"pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_clocklock",
	"pthread_mutex_unlock", "pthread_rwlock_rdlock", "pthread_rwlock_timedrdlock",
	"pthread_rwlock_clockrdlock", "pthread_rwlock_wrlock", "pthread_rwlock_timedwrlock",
	"pthread_rwlock_clockwrlock", "pthread_rwlock_unlock", "pthread_cond_wait",
	"pthread_cond_timedwait", "pthread_cond_clockwait", "sem_wait", "sem_timedwait",
	"sem_clockwait", "pthread_join",
};
#define INJECT_NHEAP (sizeof(inject_heap_names) / sizeof(inject_heap_names[0]))
#define INJECT_NLOCK (sizeof(inject_lock_names) / sizeof(inject_lock_names[0]))
static struct got_hook inject_hooks[INJECT_NHEAP + INJECT_NLOCK + 2];
static size_t inject_nhooks;

int cprof_inject_arm(uint64_t flags, uint64_t sample_rate, uint64_t block_rate,
		     uint64_t mutex_fraction) SHIM_EXPORT;
int cprof_inject_disarm(void) SHIM_EXPORT;
void *inject_dlopen(const char *file, int mode) SHIM_HIDDEN;
void *inject_dlmopen(Lmid_t ns, const char *file, int mode) SHIM_HIDDEN;
int inject_keeps_caller(const char *file) SHIM_HIDDEN;
void inject_dlopen_entry(void) SHIM_HIDDEN;
void inject_dlmopen_entry(void) SHIM_HIDDEN;

static uint64_t inject_clock(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int inject_try_lock(void)
{
	int expected = 0;

	return __atomic_compare_exchange_n(&inject_lock, &expected, 1, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static void inject_unlock(void)
{
	__atomic_store_n(&inject_lock, 0, __ATOMIC_RELEASE);
}

/* Sets cprof_inject_why (vsnprintf on a string: no FILE lock, no allocation). */
static void inject_why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void inject_why(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cprof_inject_why, sizeof(cprof_inject_why), fmt, ap);
	va_end(ap);
}

/* Publishes a call's result, then counts the call (contract: result first). */
static int inject_return(int rc)
{
	__atomic_store_n(&cprof_inject_result, rc, __ATOMIC_RELEASE);
	__atomic_fetch_add(&cprof_inject_calls, 1, __ATOMIC_RELEASE);
	return rc;
}

struct inject_order {
	const void *self, *libc;
	int index, self_at, libc_at;
};

static int inject_order_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct inject_order *o = arg;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + p->p_vaddr;

		if (p->p_type != PT_LOAD)
			continue;
		if ((uintptr_t)o->self - lo < p->p_memsz && o->self_at < 0)
			o->self_at = o->index;
		if ((uintptr_t)o->libc - lo < p->p_memsz && o->libc_at < 0)
			o->libc_at = o->index;
	}
	o->index++;
	return 0;
}

int inject_loaded_late(void)
{
	struct inject_order o = { (const void *)cprof_inject_arm, (const void *)dl_iterate_phdr, 0,
				  -1, -1 };

	dl_iterate_phdr(inject_order_cb, &o);
	return o.self_at >= 0 && o.libc_at >= 0 && o.self_at > o.libc_at;
}

/*
 * The real dlopen (or dlmopen): the program's first definition, unless
 * that is in the main program, where it can only be a non-PIE program's
 * canonical PLT entry jumping through the slot the shim patches (the
 * shim would call itself): then the next one after the shim, libc's.
 */
static void *inject_lookup(const char *name)
{
	struct link_map *lm = NULL;
	Dl_info info;
	void *f = dlsym(RTLD_DEFAULT, name);

	if (f != NULL && dladdr1(f, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm != NULL &&
	    (lm->l_name == NULL || lm->l_name[0] == '\0'))
		f = dlsym(RTLD_NEXT, name);
	return f;
}

/*
 * Everything the hooks call, resolved before any slot points at them:
 * the real allocator and lock functions, the real dlopen, the shim's own
 * hook functions. 0, or -errno with the reason set.
 */
static int inject_resolve(void)
{
	Dl_info self;
	void *h, *f;
	size_t i;

	if (inject_resolved)
		return 0;
	if (next_resolved() && !next_injected) {
		inject_why("libcprof.so resolved its allocator as a preloaded shim would");
		return -EINVAL;
	}
	next_injected = 1;
	locknext_injected = 1;
	shim_tls.busy++;
	(void)next_resolve();
	locknext_resolve_all();
	inject_real_dlopen = (void *(*)(const char *, int))inject_lookup("dlopen");
	inject_real_dlmopen = (void *(*)(Lmid_t, const char *, int))inject_lookup("dlmopen");
	h = NULL;
	if (dladdr((const void *)cprof_inject_arm, &self) != 0 && self.dli_fname != NULL)
		h = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	shim_tls.busy--;
	if (h == NULL) {
		inject_why("libcprof.so cannot find its own handle");
		return -ENOENT;
	}
	inject_nhooks = 0;
	for (i = 0; i < INJECT_NHEAP + INJECT_NLOCK; i++) {
		const char *name = i < INJECT_NHEAP ? inject_heap_names[i] :
						     inject_lock_names[i - INJECT_NHEAP];

		shim_tls.busy++;
		f = dlsym(h, name);
		shim_tls.busy--;
		if (f == NULL) {
			inject_why("libcprof.so does not define %s", name);
			return -ENOENT;
		}
		inject_hooks[inject_nhooks++] = (struct got_hook){ name, f };
	}
	inject_hooks[inject_nhooks++] = (struct got_hook){ "dlopen", (void *)inject_dlopen_entry };
	inject_hooks[inject_nhooks++] = (struct got_hook){ "dlmopen", (void *)inject_dlmopen_entry };
	if (inject_real_dlopen == NULL) {
		inject_why("no dlopen in the process");
		return -ENOENT;
	}
	inject_env_rate = shim_rate;
	inject_env_block = lockprof_block_rate;
	inject_env_fraction = lockprof_mutex_fraction;
	inject_resolved = 1;
	return 0;
}

/*
 * Patches the armed families' slots (plus dlopen's) in every loaded
 * object. Heap hooks are the first INJECT_NHEAP, lock hooks the next, the
 * dlopen pair last: the armed families are given as a contiguous view
 * when possible, else in two calls.
 */
static int inject_patch(uint64_t flags)
{
	const struct got_hook *dl = &inject_hooks[INJECT_NHEAP + INJECT_NLOCK];
	int rc, n = 0;

	shim_tls.busy++;
	if ((flags & CPROF_INJECT_HEAP) && (flags & CPROF_INJECT_LOCKS)) {
		rc = got_patch(inject_hooks, inject_nhooks, (const void *)cprof_inject_arm);
	} else if (flags & CPROF_INJECT_LOCKS) {
		rc = got_patch(&inject_hooks[INJECT_NHEAP], INJECT_NLOCK + 2,
			       (const void *)cprof_inject_arm);
	} else {
		rc = got_patch(inject_hooks, INJECT_NHEAP, (const void *)cprof_inject_arm);
		if (rc >= 0) {
			n = rc;
			rc = got_patch(dl, 2, (const void *)cprof_inject_arm);
		}
	}
	shim_tls.busy--;
	return rc < 0 ? rc : rc + n;
}

/* Restores the slots and records why (state): under the lock. */
static int inject_unpatch(uint32_t state)
{
	int n;

	shim_tls.busy++;
	n = got_restore();
	shim_tls.busy--;
	__atomic_store_n(&inject_armed, 0, __ATOMIC_RELEASE);
	inject_state_v = state;
	table_inject_set(inject_ns, state);
	return n;
}

int cprof_inject_arm(uint64_t flags, uint64_t sample_rate, uint64_t block_rate,
		     uint64_t mutex_fraction)
{
	int rc, was;

	if (!inject_try_lock()) {
		inject_why("another arm or disarm is under way");
		return inject_return(-EBUSY);
	}
	errno = 0;
	flags &= CPROF_INJECT_HEAP | CPROF_INJECT_LOCKS;
	if (!shim_late) {
		inject_why("libcprof.so is preloaded: it interposes already");
		rc = -EEXIST;
		goto err;
	}
	if (flags == 0) {
		inject_why("nothing to arm: flags has neither heap (1) nor locks (2)");
		rc = -EINVAL;
		goto err;
	}
	shim_init();
	if ((rc = inject_resolve()) != 0)
		goto err;
	if ((flags & CPROF_INJECT_HEAP) && next_kind() == NEXT_PASS) {
		inject_why("allocator not supported: %s", next_why());
		rc = -ENOTSUP;
		goto err;
	}
	/* Arguments override the target's CPROF_* settings; (uint64_t)-1 or 0 (rate): those. */
	shim_rate = sample_rate != 0 ? sample_rate : inject_env_rate;
	if (!(flags & CPROF_INJECT_HEAP))
		shim_rate = inject_env_rate; /* unused: no allocation hook */
	lockprof_block_rate = !(flags & CPROF_INJECT_LOCKS) ? 0 :
			      block_rate == UINT64_MAX ? inject_env_block : block_rate;
	lockprof_mutex_fraction = !(flags & CPROF_INJECT_LOCKS) ? 0 :
				  mutex_fraction == UINT64_MAX ? inject_env_fraction : mutex_fraction;
	if (__atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) != SHIM_READY || !shim_activate()) {
		inject_why("libcprof.so could not make its segment (errno %d) or is off%s%s", errno,
			   next_why()[0] ? ": " : "", next_why());
		rc = -ENOMEM;
		goto err;
	}
	table_set_rates(shim_rate, lockprof_block_rate, lockprof_mutex_fraction);
	was = __atomic_load_n(&inject_armed, __ATOMIC_ACQUIRE);
	if (was && flags != inject_flags) {
		(void)inject_unpatch(SEG_INJECT_DORMANT); /* re-applied below, same window */
	} else if (!was) {
		if (inject_state_v != SEG_INJECT_NONE) {
			/* A new window: nothing counted before or while dormant stays. */
			table_reset_counters();
			blocks_clear();
		}
		inject_ns = inject_clock(CLOCK_REALTIME);
	}
	inject_mono = inject_clock(CLOCK_MONOTONIC); /* an arm counts as the reader's beat */
	inject_flags = flags;
	inject_state_v = SEG_INJECT_ARMED;
	table_inject_set(inject_ns, SEG_INJECT_ARMED);
	__atomic_store_n(&inject_armed, 1, __ATOMIC_RELEASE);
	rc = inject_patch(flags);
	if (rc < 0) {
		if (rc == -EFAULT)
			inject_why("a GOT slot's page is not in /proc/self/maps");
		else
			inject_why("mprotect refused to make a GOT page writable (errno %d): a seccomp "
				   "or LSM policy?", -rc);
		(void)inject_unpatch(SEG_INJECT_DORMANT);
		goto err;
	}
	rc = (int)got_saved();
	cprof_inject_why[0] = '\0';
err:
	inject_unlock();
	return inject_return(rc);
}

int cprof_inject_disarm(void)
{
	int n = 0;

	if (!inject_try_lock()) {
		inject_why("another arm or disarm is under way");
		return inject_return(-EBUSY);
	}
	if (__atomic_load_n(&inject_armed, __ATOMIC_ACQUIRE))
		n = inject_unpatch(SEG_INJECT_DORMANT);
	inject_unlock();
	return inject_return(n);
}

void inject_check_slow(void)
{
	uint64_t now = inject_clock(CLOCK_MONOTONIC), beat = table_reader_beat(), base;

	base = beat > inject_mono ? beat : inject_mono;
	if (now < base || now - base < SEG_INJECT_QUIET_NS)
		return;
	if (!inject_try_lock())
		return; /* an arm or disarm is under way: it decides */
	if (__atomic_load_n(&inject_armed, __ATOMIC_ACQUIRE))
		(void)inject_unpatch(SEG_INJECT_EJECTED);
	inject_unlock();
}

void inject_fork_child(void)
{
	inject_lock = 0;
	if (__atomic_load_n(&inject_armed, __ATOMIC_ACQUIRE))
		inject_mono = inject_clock(CLOCK_MONOTONIC);
}

/*
 * Objects loaded while armed get their slots patched too. An arm or
 * disarm under way holds the try-lock for a moment (this thread holds no
 * loader lock here, so it cannot be what that call waits for): wait for
 * it, bounded, rather than leave the new object unpatched.
 */
static void inject_after_load(void *h)
{
	int saved = errno;
	unsigned i;

	if (h == NULL || !__atomic_load_n(&inject_armed, __ATOMIC_ACQUIRE))
		return;
	for (i = 0; i < 10000 && !inject_try_lock(); i++)
		sched_yield();
	if (i < 10000) {
		if (__atomic_load_n(&inject_armed, __ATOMIC_ACQUIRE))
			(void)inject_patch(inject_flags);
		inject_unlock();
	}
	errno = saved;
}

/*
 * Whether what file means depends on who calls dlopen: a bare name is
 * searched through the calling object's DT_RUNPATH (or DT_RPATH), and
 * $ORIGIN (any $ token) is the calling object's directory. The real
 * dlopen takes its caller from its return address, so such a call must
 * reach it with the program's return address: the entries below jump to
 * it, and that object is patched at the next arm, not now.
 */
int inject_keeps_caller(const char *file)
{
	return file != NULL && (strchr(file, '/') == NULL || strchr(file, '$') != NULL);
}

/*
 * The hooked dlopen and dlmopen (the slots point here): when the name
 * depends on the caller (inject_keeps_caller), a jump to the real
 * function with the stack as the program made it; otherwise the call
 * through inject_dlopen, which patches what was loaded. Registers: the
 * arguments are saved around the test, the stack kept 16-byte aligned.
 */
__asm__(".text\n"
	".p2align 4\n"
	".type inject_dlopen_entry, @function\n"
	"inject_dlopen_entry:\n"
	".cfi_startproc\n"
	"	endbr64\n"
	"	push %rdi\n"
	".cfi_adjust_cfa_offset 8\n"
	"	push %rsi\n"
	".cfi_adjust_cfa_offset 8\n"
	"	sub $8, %rsp\n"
	".cfi_adjust_cfa_offset 8\n"
	"	call inject_keeps_caller\n"
	"	add $8, %rsp\n"
	".cfi_adjust_cfa_offset -8\n"
	"	pop %rsi\n"
	".cfi_adjust_cfa_offset -8\n"
	"	pop %rdi\n"
	".cfi_adjust_cfa_offset -8\n"
	"	test %eax, %eax\n"
	"	jz 1f\n"
	"	jmp *inject_real_dlopen(%rip)\n"
	"1:	jmp inject_dlopen\n"
	".cfi_endproc\n"
	".size inject_dlopen_entry, .-inject_dlopen_entry\n"
	".p2align 4\n"
	".type inject_dlmopen_entry, @function\n"
	"inject_dlmopen_entry:\n"
	".cfi_startproc\n"
	"	endbr64\n"
	"	push %rdi\n"
	".cfi_adjust_cfa_offset 8\n"
	"	push %rsi\n"
	".cfi_adjust_cfa_offset 8\n"
	"	push %rdx\n"
	".cfi_adjust_cfa_offset 8\n"
	"	mov %rsi, %rdi\n"
	"	call inject_keeps_caller\n"
	"	pop %rdx\n"
	".cfi_adjust_cfa_offset -8\n"
	"	pop %rsi\n"
	".cfi_adjust_cfa_offset -8\n"
	"	pop %rdi\n"
	".cfi_adjust_cfa_offset -8\n"
	"	test %eax, %eax\n"
	"	jz 1f\n"
	"	cmpq $0, inject_real_dlmopen(%rip)\n"
	"	je 1f\n"
	"	jmp *inject_real_dlmopen(%rip)\n"
	"1:	jmp inject_dlmopen\n"
	".cfi_endproc\n"
	".size inject_dlmopen_entry, .-inject_dlmopen_entry\n");

/* The dlopen hook for a name that means the same from any caller: loaded, then patched. */
void *inject_dlopen(const char *file, int mode)
{
	void *h = inject_real_dlopen(file, mode);

	inject_after_load(h);
	return h;
}

void *inject_dlmopen(Lmid_t ns, const char *file, int mode)
{
	void *h;

	if (inject_real_dlmopen == NULL) {
		errno = ENOSYS;
		return NULL;
	}
	h = inject_real_dlmopen(ns, file, mode);
	inject_after_load(h);
	return h;
}
