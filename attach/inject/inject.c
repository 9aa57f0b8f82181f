/*
 * inject.c — inject.h. Invariant: every refusal is decided from what the
 * target shows of itself before any thread is stopped, and every message
 * is one line naming the process and the cause; a remote call that cannot
 * run now is retried on a freshly chosen thread until the deadline, never
 * forced.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "attach/inject/dynsym.h"
#include "attach/inject/inject.h"
#include "attach/inject/pick.h"
#include "attach/inject/remcall.h"
#include "common/err.h"
#include "common/exitcode.h"
#include "common/proc.h"
#include "common/troot.h"
#include "common/vmread.h"
#include "common/watchdog.h"
#include "unwind/elfimg.h"
#include "unwind/maps.h"

#define RTLD_NOW_LOCAL 2 /* RTLD_NOW | RTLD_LOCAL */
#define WHY_LEN 256      /* cprof_inject_why */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static int is_libc_path(const char *p)
{
	const char *b = base_name(p);

	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5);
}

/* A field of /proc/PID/status as a number; -1 when missing. */
static long status_field(const char *status, const char *key)
{
	const char *p = strstr(status, key);

	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* Whether the executable of pid is a Go program (the Go linker's build ID note). */
static int is_go_program(pid_t pid)
{
	char exe[PATH_MAX];
	const unsigned char *p;
	const char *why;
	uint64_t va;
	size_t n;
	ssize_t r;
	int fd, z, go = 0;
	struct elf_image *img;
	char link[64];

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	if ((r = readlink(link, exe, sizeof(exe) - 1)) <= 0)
		return 0;
	exe[r] = 0;
	if ((fd = troot_open(pid, troot_target_path(pid, exe), TROOT_FOLLOW, &why)) < 0)
		return 0;
	if ((img = elf_image_open(fd))) {
		go = elf_image_section(img, ".note.go.buildid", &p, &n, &va, &z) == 0 ||
		     elf_image_section(img, ".go.buildinfo", &p, &n, &va, &z) == 0;
		elf_image_free(img);
	}
	close(fd);
	return go;
}

/* The address in the target of symbol name of the object mapped from path at base. */
static int target_symbol(pid_t pid, const char *path, uint64_t base, const char *name,
			 uint64_t *addr)
{
	const char *why;
	uint64_t v;
	int fd = troot_open(pid, troot_target_path(pid, path), TROOT_FOLLOW, &why), r;

	if (fd < 0)
		return -1;
	r = dynsym_lookup(fd, name, &v);
	close(fd);
	if (r < 0)
		return -1;
	*addr = base + v;
	return 0;
}

/* Where the target maps a libcprof.so: in->mapped and in->shim_base, or "" and 0. */
static int find_shim(struct inject *in)
{
	struct maps m;
	size_t i;

	in->mapped[0] = 0;
	in->shim_base = 0;
	maps_init(&m);
	if (maps_read(&m, in->pid) < 0)
		return -1;
	for (i = 0; i < m.n; i++)
		if (m.v[i].offset == 0 && !strcmp(base_name(m.v[i].path), "libcprof.so")) {
			snprintf(in->mapped, sizeof(in->mapped), "%s", m.v[i].path);
			in->shim_base = m.v[i].start;
			break;
		}
	maps_release(&m);
	return 0;
}

int inject_prepare(struct inject *in, pid_t pid, const char *shim, uint64_t deadline_ms)
{
	char path[64], status[4096], there[PATH_MAX + 64], libc[PATH_MAX] = "";
	struct stat ours, theirs;
	struct maps m;
	const char *why;
	uint64_t libc_base = 0;
	long tracer, seccomp;
	int musl = 0, code = EXIT_ATTACH;
	size_t i;

	memset(in, 0, sizeof(*in));
	in->pid = pid;
	in->deadline_ms = deadline_ms ? deadline_ms : PICK_DEADLINE_MS;
	snprintf(in->shim, sizeof(in->shim), "%s", shim);
	maps_init(&m);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (proc_read(path, status, sizeof(status)) < 0) {
		error("cannot inject into %d: it is gone", (int)pid);
		return EXIT_GONE;
	}
	tracer = status_field(status, "\nTracerPid:");
	if (tracer > 0 && tracer != getpid()) {
		error("cannot inject into %d: it is already traced by %ld (a debugger or another "
		      "profiler); a process has one tracer at a time", (int)pid, tracer);
		return EXIT_ATTACH;
	}
	seccomp = status_field(status, "\nSeccomp:");
	if (seccomp > 0) {
		error("cannot inject into %d: it runs under seccomp (mode %ld); a filter could kill "
		      "it on the mmap or mprotect that loading libcprof.so needs", (int)pid, seccomp);
		return EXIT_ATTACH;
	}
	/*
	 * A user shadow stack (CET) checks every return against its own copy:
	 * the call's return into __restore_rt, which no call pushed, would be
	 * a control-protection fault, and so would the frame's rt_sigreturn.
	 */
	{
		const char *f = strstr(status, "\nx86_Thread_features:");
		char line[128] = "";

		if (f)
			snprintf(line, sizeof(line), "%.*s", (int)strcspn(f + 1, "\n"), f + 1);
		if (strstr(line, "shstk")) {
			error("cannot inject into %d: it runs with a shadow stack (CET), which "
			      "a call made from outside would break", (int)pid);
			return EXIT_ATTACH;
		}
	}
	if (is_go_program(pid)) {
		error("cannot inject into %d: it is a Go program; its runtime does not allocate "
		      "through the C library's malloc", (int)pid);
		return EXIT_ATTACH;
	}
	if (maps_read(&m, pid) < 0) {
		error("cannot inject into %d: its memory map cannot be read: %s", (int)pid,
		      strerror(errno));
		return errno == ESRCH ? EXIT_GONE : EXIT_ATTACH;
	}
	for (i = 0; i < m.n; i++) {
		const char *b = base_name(m.v[i].path);

		if (!strncmp(b, "ld-musl", 7) || !strncmp(b, "libc.musl", 9))
			musl = 1;
		if (!libc[0] && m.v[i].offset == 0 && is_libc_path(m.v[i].path)) {
			snprintf(libc, sizeof(libc), "%s", m.v[i].path);
			libc_base = m.v[i].start;
		}
	}
	if (musl) {
		error("cannot inject into %d: its C library is musl; injection needs glibc 2.34 or "
		      "later", (int)pid);
		goto out;
	}
	if (!libc[0]) {
		error("cannot inject into %d: no C library is mapped in it (a static binary); "
		      "nothing can be loaded into it", (int)pid);
		goto out;
	}
	if (target_symbol(pid, libc, libc_base, "dlopen", &in->dlopen) < 0) {
		error("cannot inject into %d: its C library (%s) exports no dlopen: glibc older "
		      "than 2.34, or not glibc", (int)pid, libc);
		goto out;
	}
	if (remcall_find_restorer(pid, &in->restorer, &why) < 0) {
		error("cannot inject into %d: %s", (int)pid, why);
		goto out;
	}
	if (stat(shim, &ours) < 0) {
		error("cannot inject into %d: %s: %s", (int)pid, shim, strerror(errno));
		goto out;
	}
	snprintf(there, sizeof(there), "/proc/%d/root%s", (int)pid, shim);
	if (stat(there, &theirs) < 0 || theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino) {
		error("cannot inject into %d: it does not see %s as the same file (another mount "
		      "namespace or root); install libcprof.so at that path inside it", (int)pid, shim);
		goto out;
	}
	if (find_shim(in) < 0) {
		error("cannot inject into %d: its memory map cannot be read", (int)pid);
		goto out;
	}
	code = 0;
out:
	maps_release(&m);
	return code;
}

static int sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	return nanosleep(&ts, NULL);
}

/* What a call's thread is vetted against once stopped (call_vet). */
struct call_vet_ctx {
	struct pick *p;
	uint64_t fn;
	const char *obj; /* the file name fn must be in: "libcprof.so", or a prefix "libc.so" */
	int stale;       /* call_vet found fn no longer there: no retry */
};

/*
 * pick_vet, and then, the thread stopped, whether fn is still code of
 * the object it was found in: the target may have exec'd (or unloaded the
 * object) since its address was read, and a call to a stale address would
 * run whatever is there now. Read from the maps after the stop: while the
 * thread is held, an exec in another thread kills it rather than replace
 * the image under the call.
 */
static int call_vet(void *ctx, pid_t pid, pid_t tid, const struct user_regs_struct *regs,
		    char *why, size_t cap)
{
	struct call_vet_ctx *c = ctx;
	const struct map_entry *e;
	struct maps m;
	int ok;

	if (pick_vet(c->p, pid, tid, regs, why, cap) < 0)
		return -1;
	maps_init(&m);
	ok = maps_read(&m, pid) == 0 && (e = maps_find(&m, c->fn)) && (e->perms & MAP_X) &&
	     !strncmp(base_name(e->path), c->obj, strlen(c->obj));
	maps_release(&m);
	if (!ok) {
		snprintf(why, cap, "%s is no longer mapped where it was (the process exec'd?)",
			 c->obj);
		c->stale = 1;
		return -1;
	}
	return 0;
}

/*
 * One remote call of fn (in the object obj) on a thread pick.h allows,
 * retried until the deadline. 0, or an exit code (message printed; what
 * names the call).
 */
static int call_somewhere(struct inject *in, const char *what, uint64_t fn, const char *obj,
			  const uint64_t *args, const void *blob, size_t blob_len, int blob_arg)
{
	struct remcall_req req;
	struct remcall_res res;
	struct call_vet_ctx vc = { NULL, fn, obj, 0 };
	struct pick *p = NULL;
	char blame[300] = "no thread could be chosen", held[300] = "";
	const char *why;
	uint64_t end = clock_mono_ns() + in->deadline_ms * 1000000ull;
	pid_t tid;
	int r, code = EXIT_ATTACH;

	memset(&req, 0, sizeof(req));
	req.fn = fn;
	memcpy(req.args, args, sizeof(req.args));
	req.blob = blob;
	req.blob_len = blob_len;
	req.blob_arg = blob_arg;
	req.restorer = in->restorer;
	req.deadline_ms = in->deadline_ms;
	req.vet = call_vet;
	for (;;) {
		/* A stop asked: no new call (one under way was finished first). */
		if (watchdog_stop_signal()) {
			error("cannot %s in %d: interrupted", what, (int)in->pid);
			return EXIT_INTERRUPTED;
		}
		if (!(p = pick_new(in->pid, &why))) {
			error("cannot %s in %d: %s", what, (int)in->pid, why);
			return EXIT_ATTACH;
		}
		vc.p = p;
		req.vet_ctx = &vc;
		r = pick_once(p, &tid, blame, sizeof(blame));
		if (r == 0)
			snprintf(held, sizeof(held), "%s", blame); /* the cause worth naming at the end */
		if (r == 1) {
			r = remcall_call(in->pid, tid, &req, &res);
			if (r == REMCALL_OK || r == REMCALL_TIMEOUT) {
				in->ncalls++;
				in->stop_ns_sum += res.stop_ns;
				in->syscalls += res.syscalls;
				if (res.stop_ns > in->stop_ns_max)
					in->stop_ns_max = res.stop_ns;
			}
			if (r == REMCALL_OK) {
				code = 0;
				break;
			}
			if (r == REMCALL_TIMEOUT) {
				error("cannot %s in %d: %s", what, (int)in->pid, res.why);
				break;
			}
			if (r == REMCALL_GONE && kill(in->pid, 0) < 0) {
				error("cannot %s in %d: the process exited", what, (int)in->pid);
				code = EXIT_GONE;
				break;
			}
			snprintf(blame, sizeof(blame), "%s", res.why);
			if (vc.stale) {
				error("cannot %s in %d: %s", what, (int)in->pid, res.why);
				code = EXIT_GONE;
				break;
			}
		}
		pick_free(p);
		p = NULL;
		if (clock_mono_ns() + PICK_RETRY_MS * 1000000ull >= end) {
			error("cannot %s in %d within %llu ms: %s", what, (int)in->pid,
			      (unsigned long long)in->deadline_ms, held[0] ? held : blame);
			break;
		}
		sleep_ms(PICK_RETRY_MS);
	}
	pick_free(p);
	return code;
}

int inject_load(struct inject *in)
{
	uint64_t args[6] = { 0, RTLD_NOW_LOCAL, 0, 0, 0, 0 };
	int code;

	if (in->mapped[0])
		return 0;
	code = call_somewhere(in, "load libcprof.so", in->dlopen, "libc.so", args, in->shim,
			      strlen(in->shim) + 1, 0);
	if (code)
		return code;
	if (find_shim(in) < 0 || !in->mapped[0]) {
		error("cannot load libcprof.so in %d: its dlopen failed (libcprof.so not mapped "
		      "after the call)", (int)in->pid);
		return EXIT_ATTACH;
	}
	in->loaded = 1;
	return 0;
}

/* The shim's exported result of the call just made. 0, or an exit code (message printed). */
static int shim_call(struct inject *in, const char *what, const char *sym, const uint64_t *args,
		     int *result)
{
	uint64_t fn, a_result, a_calls, a_why, before = 0, after = 0;
	uint64_t end = clock_mono_ns() + in->deadline_ms * 1000000ull;
	char why[WHY_LEN];
	int code;

	/* Looked up again before every call: the process may have exec'd since (call_vet). */
	if (find_shim(in) < 0)
		return EXIT_ATTACH;
	if (!in->mapped[0]) {
		error("cannot %s in %d: libcprof.so is no longer in it (the process exec'd?)", what,
		      (int)in->pid);
		return EXIT_GONE;
	}
	if (target_symbol(in->pid, in->mapped, in->shim_base, sym, &fn) < 0 ||
	    target_symbol(in->pid, in->mapped, in->shim_base, "cprof_inject_result", &a_result) < 0 ||
	    target_symbol(in->pid, in->mapped, in->shim_base, "cprof_inject_calls", &a_calls) < 0 ||
	    target_symbol(in->pid, in->mapped, in->shim_base, "cprof_inject_why", &a_why) < 0) {
		error("cannot %s in %d: its libcprof.so (%s) has no %s: an older libcprof.so",
		      what, (int)in->pid, in->mapped, sym);
		return EXIT_ATTACH;
	}
	if (vm_read(in->pid, a_calls, &before, sizeof(before)) < 0) {
		error("cannot %s in %d: its memory cannot be read", what, (int)in->pid);
		return EXIT_ATTACH;
	}
	for (;;) {
		if ((code = call_somewhere(in, what, fn, "libcprof.so", args, NULL, 0, -1)))
			return code;
		if (vm_read(in->pid, a_calls, &after, sizeof(after)) < 0 ||
		    vm_read(in->pid, a_result, result, sizeof(*result)) < 0) {
			error("cannot %s in %d: its memory cannot be read after the call", what,
			      (int)in->pid);
			return EXIT_ATTACH;
		}
		/* Another arm or disarm under way (the dlopen hook's patch): again, until the deadline. */
		if (after == before || *result != -EBUSY || clock_mono_ns() >= end)
			break;
		before = after;
		sleep_ms(PICK_RETRY_MS);
	}
	if (after == before) {
		error("cannot %s in %d: the call did not run (cprof_inject_calls unchanged)", what,
		      (int)in->pid);
		return EXIT_ATTACH;
	}
	if (*result < 0) {
		memset(why, 0, sizeof(why));
		(void)vm_read(in->pid, a_why, why, sizeof(why) - 1);
		for (size_t i = 0; why[i]; i++)
			if (why[i] < 0x20 || why[i] == 0x7f)
				why[i] = '?';
		error("cannot %s in %d: libcprof.so refused (%d): %s", what, (int)in->pid, *result,
		      why[0] ? why : "no reason given");
		return EXIT_ATTACH;
	}
	return 0;
}

int inject_arm(struct inject *in, uint64_t flags, uint64_t rate, uint64_t block_rate,
	       uint64_t mutex_fraction)
{
	uint64_t args[6] = { flags, rate, block_rate, mutex_fraction, 0, 0 };
	int result = 0, code;

	if ((code = shim_call(in, "arm libcprof.so", "cprof_inject_arm", args, &result)))
		return code;
	in->armed = 1;
	return 0;
}

int inject_disarm(struct inject *in)
{
	uint64_t args[6] = { 0 };
	int result = 0, code;

	if ((code = shim_call(in, "disarm libcprof.so", "cprof_inject_disarm", args, &result)))
		return code;
	in->armed = 0;
	return 0;
}
