/*
 * pick.c — pick.h. Invariant: everything read here is the target's and may
 * change under the read (a thread wakes, a library is loaded): a word that
 * names nothing is skipped, a file that cannot be opened in the target's
 * root leaves its frames unnamed (and so unblamed, except in an allocator
 * object, whose every frame blames), and the chosen thread is vetted again
 * once stopped.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>
#include <unistd.h>

#include "attach/inject/dynsym.h"
#include "attach/inject/pick.h"
#include "attach/inject/remcall.h"
#include "common/proc.h"
#include "common/troot.h"
#include "common/vmread.h"
#include "unwind/elfimg.h"
#include "unwind/maps.h"
#include "unwind/space.h"
#include "unwind/unwinder.h"

#define OBJ_MAX 512
#define PICK_DEPTH 128

struct obj {
	char *path;
	struct elf_image *img;  /* NULL: not opened yet, or unreadable (tried set) */
	int tried;
	int allocator;          /* defines malloc and is not libc (jemalloc, tcmalloc) */
};

struct pick {
	pid_t pid;
	struct maps maps;
	char exe[4096];         /* the executable's path in maps: never an "allocator object" */
	struct obj obj[OBJ_MAX];
	int nobj;
	unsigned char *stack;
	struct space *space;    /* for the unwinder */
	struct unwinder *uw;    /* NULL: the conservative scan alone */
	uint32_t unwound, scanned; /* stacks judged by each way */
};

/*
 * Names of frames that may hold a lock dlopen takes: the allocator, the
 * loader, stdio. Compared after leading underscores and "GI_" are
 * skipped: whole names, and prefixes of internal families (a prefix such
 * as "free" would take bash's freeze_jobs_list for the allocator).
 */
static const char *const bad_exact[] = {
	"malloc", "free", "cfree", "realloc", "calloc", "reallocarray", "memalign", "posix_memalign",
	"aligned_alloc", "valloc", "pvalloc", "mallinfo", "mallinfo2", "malloc_info", "malloc_stats",
	"malloc_trim", "malloc_usable_size", "dlopen", "dlclose", "dlsym", "dlvsym", "dlmopen",
	"dlerror", "dladdr", "dladdr1", "dlinfo", "dl_iterate_phdr", "fflush", "fwrite", "fputs",
	"fputc", "fprintf", "printf", "vprintf", "vfprintf", "dprintf", "puts", "putc", "putchar",
	"fgets", "fgetc", "getc", "ungetc", "fread", "getline", "getdelim", "fclose", "fopen",
	"fopen64", "fdopen", "freopen", "fseek", "fseeko", "ftell", "ftello", "setvbuf", "strdup",
	"strndup", "sysmalloc", "new_do_write",
};
static const char *const bad_prefix[] = {
	"int_", "arena_", "tcache", "malloc_", "libc_malloc", "libc_free", "libc_calloc",
	"libc_realloc", "libc_memalign", "libc_dl", "mid_memalign", "ptmalloc", "dl_", "dlopen_",
	"dlclose_", "IO_", "vfprintf_", "printf_buffer", "buffered_vfprintf",
};

static const char *bare(const char *n)
{
	while (*n == '_')
		n++;
	if (!strncmp(n, "GI_", 3))
		n += 3;
	while (*n == '_')
		n++;
	return n;
}

static int bad_name(const char *name)
{
	const char *b = bare(name);
	size_t i;

	for (i = 0; i < sizeof(bad_exact) / sizeof(bad_exact[0]); i++)
		if (!strcmp(b, bad_exact[i]))
			return 1;
	for (i = 0; i < sizeof(bad_prefix) / sizeof(bad_prefix[0]); i++)
		if (!strncmp(b, bad_prefix[i], strlen(bad_prefix[i])))
			return 1;
	return 0;
}

static int is_libc(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5);
}

static int is_shim(const char *path)
{
	const char *b = strrchr(path, '/');

	return !strcmp(b ? b + 1 : path, "libcprof.so");
}

static struct obj *obj_get(struct pick *p, const char *path)
{
	const char *why;
	uint64_t v;
	int i, fd;

	for (i = 0; i < p->nobj; i++)
		if (!strcmp(p->obj[i].path, path))
			break;
	if (i == p->nobj) {
		if (p->nobj == OBJ_MAX || !(p->obj[i].path = strdup(path)))
			return NULL;
		p->nobj++;
	}
	if (!p->obj[i].tried) {
		p->obj[i].tried = 1;
		fd = troot_open(p->pid, troot_target_path(p->pid, path), TROOT_FOLLOW, &why);
		if (fd >= 0) {
			/*
			 * The executable is left out: its frames are on every
			 * stack, and one that links its own allocator would
			 * hold every injection off.
			 */
			p->obj[i].allocator = !is_libc(path) && !is_shim(path) &&
					      strcmp(path, p->exe) != 0 &&
					      dynsym_lookup(fd, "malloc", &v) == 0;
			p->obj[i].img = elf_image_open(fd);
			close(fd);
		}
	}
	return &p->obj[i];
}

struct pick *pick_new(pid_t pid, const char **why)
{
	struct pick *p = calloc(1, sizeof(*p));

	if (!p || !(p->stack = malloc(PICK_SCAN))) {
		free(p);
		*why = "out of memory";
		return NULL;
	}
	p->pid = pid;
	{
		char link[64];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
		n = readlink(link, p->exe, sizeof(p->exe) - 1);
		p->exe[n > 0 ? n : 0] = 0;
	}
	maps_init(&p->maps);
	if ((p->space = space_new(pid)))
		p->uw = unwinder_new(p->space);
	if (maps_read(&p->maps, pid) < 0) {
		*why = "its memory map cannot be read";
		pick_free(p);
		return NULL;
	}
	return p;
}

void pick_free(struct pick *p)
{
	int i;

	if (!p)
		return;
	for (i = 0; i < p->nobj; i++) {
		free(p->obj[i].path);
		if (p->obj[i].img)
			elf_image_free(p->obj[i].img);
	}
	maps_release(&p->maps);
	unwinder_free(p->uw);
	space_free(p->space);
	free(p->stack);
	free(p);
}

/* The length of an indirect call (ff /2, with an optional REX) starting at c, or 0. */
static unsigned call_len(const unsigned char *c, unsigned avail)
{
	unsigned n = 0, mod, rm, len;

	if (avail && (c[0] & 0xf0) == 0x40)
		n = 1;
	if (avail < n + 2 || c[n] != 0xff || ((c[n + 1] >> 3) & 7) != 2)
		return 0;
	mod = c[n + 1] >> 6;
	rm = c[n + 1] & 7;
	len = 2;
	if (mod == 3)
		return n + len;
	if (rm == 4) {
		len++;
		if (avail < n + 3)
			return 0;
		if (mod == 0 && (c[n + 2] & 7) == 5)
			len += 4;
	}
	if (mod == 0 && rm == 5)
		len += 4;
	else if (mod == 1)
		len += 1;
	else if (mod == 2)
		len += 4;
	return n + len;
}

/* Whether the 8 bytes before vaddr in img end with a call instruction. */
static int after_call(const struct elf_image *img, uint64_t vaddr)
{
	const unsigned char *c;
	unsigned k;

	if (vaddr < 8 || !(c = elf_image_ptr(img, vaddr - 8, 8)))
		return 0;
	if (c[3] == 0xe8)
		return 1;
	for (k = 2; k <= 8; k++)
		if (call_len(c + 8 - k, k) == k)
			return 1;
	return 0;
}

/* The virtual address in the object of addr inside mapping e, or 0. */
static uint64_t obj_vaddr(const struct elf_image *img, const struct map_entry *e, uint64_t addr)
{
	const struct elf_segment *s;
	size_t n, i;
	uint64_t off = e->offset + (addr - e->start);

	s = elf_image_segments(img, &n);
	for (i = 0; i < n; i++)
		if (off >= s[i].offset && off - s[i].offset < s[i].filesz)
			return s[i].vaddr + (off - s[i].offset);
	return 0;
}

/*
 * Whether name is glibc's condition-variable wait: a thread there has
 * released the mutex it waits with, and an allocator does not wait on a
 * condition while it holds a lock of its own (jemalloc's background
 * thread sleeps this way for its whole life, inside the allocator).
 */
static int cond_wait_name(const char *name)
{
	const char *b = bare(name);

	return !strncmp(b, "pthread_cond_", 13) && strstr(b, "wait") != NULL;
}

/*
 * Whether addr is a frame to refuse: *name its symbol (or the object's
 * path for an allocator object). ret: addr is a return address (checked
 * for a preceding call), else a pc. *waits (may be NULL) is set when the
 * frame is glibc's condition wait; with waiting, a frame of an allocator
 * object is forgiven (cond_wait_name), a frame whose name is refused is not.
 */
static int frame_bad_in(struct pick *p, uint64_t addr, int ret, int waiting, int *waits,
			const char **name)
{
	const struct map_entry *e = maps_find(&p->maps, addr);
	struct obj *o;
	uint64_t va, start;
	const char *s;

	if (!e || !(e->perms & MAP_X) || e->path[0] != '/' || !(o = obj_get(p, e->path)) || !o->img)
		return 0;
	va = obj_vaddr(o->img, e, addr);
	if (!va || (ret && !after_call(o->img, va)))
		return 0;
	s = elf_image_symbol(o->img, ret ? va - 1 : va, &start);
	if (waits && s && is_libc(e->path) && cond_wait_name(s))
		*waits = 1;
	if (o->allocator && !waiting) {
		*name = s ? s : e->path;
		return 1;
	}
	if (s && bad_name(s)) {
		*name = s;
		return 1;
	}
	return 0;
}

static int frame_bad(struct pick *p, uint64_t addr, int ret, const char **name)
{
	return frame_bad_in(p, addr, ret, 0, NULL, name);
}

/*
 * Whether the thread at sp/pc (r: its registers when stopped, or NULL)
 * has a frame to refuse: 1 and *name, else 0. The stack is unwound by CFI
 * first; only a walk that reached the thread's start is trusted alone,
 * any other stack is also scanned word by word.
 */
static int stack_bad(struct pick *p, pid_t tid, uint64_t sp, uint64_t pc,
		     const struct user_regs_struct *r, const char **name)
{
	const struct map_entry *e = maps_find(&p->maps, sp);
	size_t n, i;

	(void)tid;
	if (pc && frame_bad(p, pc, 0, name))
		return 1;
	if (!e)
		return 0;
	n = e->end - sp < PICK_SCAN ? (size_t)(e->end - sp) : PICK_SCAN;
	n = vm_read_upto(p->pid, sp & ~7ull, p->stack, n & ~(size_t)7);
	if (p->uw && n) {
		struct thread_image img;
		uint64_t pcs[PICK_DEPTH];
		uint8_t sig[PICK_DEPTH];
		unsigned flags = 0;
		size_t k, depth;

		memset(&img, 0, sizeof(img));
		img.regs.r[DWARF_RSP] = sp;
		img.regs.r[DWARF_RIP] = pc;
		img.regs.valid = 1u << DWARF_RSP | 1u << DWARF_RIP;
		if (r) {
			const uint64_t v[DWARF_NREGS] = { r->rax, r->rdx, r->rcx, r->rbx, r->rsi,
							  r->rdi, r->rbp, r->rsp, r->r8,  r->r9,
							  r->r10, r->r11, r->r12, r->r13, r->r14,
							  r->r15, r->rip };

			memcpy(img.regs.r, v, sizeof(v));
			img.regs.valid = (1u << DWARF_NREGS) - 1;
		}
		img.nstacks = 1;
		img.stack[0].addr = sp & ~7ull;
		img.stack[0].len = n;
		img.stack[0].bytes = p->stack;
		depth = unwinder_unwind(p->uw, &img, pcs, sig, PICK_DEPTH, &flags);
		if (depth && !(flags & (UNWIND_PARTIAL | UNWIND_TRUNCATED))) {
			int waiting = 0;

			p->unwound++;
			if (pc)
				frame_bad_in(p, pc, 0, 0, &waiting, name);
			for (k = 1; k < depth; k++)
				if (frame_bad_in(p, pcs[k], 0, waiting, &waiting, name))
					return 1;
			return 0;
		}
	}
	p->scanned++;
	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, p->stack + i, 8);
		if (w > 4096 && frame_bad(p, w, 1, name))
			return 1;
	}
	return 0;
}

/*
 * Calls that the stop breaks and the restart resumes exactly: without a
 * timeout, or with one the kernel keeps (restart_block: poll, nanosleep;
 * the remaining time written back: ppoll, select, pselect6). epoll_wait
 * with a timeout returns EINTR and would restart with its whole timeout
 * again: a thread there is never used (repeated calls would postpone its
 * timeout for ever).
 */
static int restartable(long nr, const uint64_t *a)
{
	switch (nr) {
	case 0: case 19: case 45: case 47: case 43: case 288: /* read readv recvfrom recvmsg accept accept4 */
	case 7: case 271: case 23: case 270: /* poll ppoll select pselect6 */
	case 35: case 230: case 61: case 34: /* nanosleep clock_nanosleep wait4 pause */
		return 1;
	case 232: case 281: /* epoll_wait, epoll_pwait: only without a timeout */
		return (int)a[3] < 0;
	case 202: /* futex: a wait without a timeout */
		return ((a[1] & 0x7f) == 0 || (a[1] & 0x7f) == 9) && a[3] == 0;
	default:
		return 0;
	}
}

int pick_once(struct pick *p, pid_t *tid, char *blame, size_t cap)
{
	char path[96], line[512];
	struct dirent *d;
	DIR *dir;
	pid_t sleeper = 0, runner = 0;
	int bad = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	if (!(dir = opendir(path))) {
		snprintf(blame, cap, "its threads cannot be listed: %s", strerror(errno));
		return -1;
	}
	while (!bad && (d = readdir(dir))) {
		pid_t t = (pid_t)atoi(d->d_name);
		uint64_t a[6] = { 0 }, sp = 0, pc = 0;
		long nr;
		const char *name;

		if (t <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)p->pid, (int)t);
		if (proc_read(path, line, sizeof(line)) <= 0)
			continue;
		if (!strncmp(line, "running", 7)) {
			if (!runner)
				runner = t;
			continue;
		}
		if (sscanf(line, "%ld %lx %lx %lx %lx %lx %lx %lx %lx", &nr, (unsigned long *)&a[0],
			   (unsigned long *)&a[1], (unsigned long *)&a[2], (unsigned long *)&a[3],
			   (unsigned long *)&a[4], (unsigned long *)&a[5], (unsigned long *)&sp,
			   (unsigned long *)&pc) != 9) {
			if (sscanf(line, "%ld %lx %lx", &nr, (unsigned long *)&sp, (unsigned long *)&pc) != 3)
				continue;
			nr = -1; /* stopped in user code (a group stop): not a sleeper to use */
		}
		if (stack_bad(p, t, sp, pc, NULL, &name)) {
			snprintf(blame, cap, "thread %d sleeps inside %s", (int)t, name);
			bad = 1;
			break;
		}
		if (nr >= 0 && !sleeper && restartable(nr, a))
			sleeper = t;
	}
	closedir(dir);
	if (bad)
		return 0;
	if (sleeper || runner) {
		*tid = sleeper ? sleeper : runner;
		return 1;
	}
	snprintf(blame, cap, "no thread sleeps in a call that restarts exactly, and none runs");
	return -1;
}

int pick_vet(void *ctx, pid_t pid, pid_t tid, const struct user_regs_struct *regs, char *why,
	     size_t cap)
{
	struct pick *p = ctx;
	const char *name;

	const struct map_entry *e = maps_find(&p->maps, regs->rsp);

	(void)pid;
	/* Room for the frame, the xstate and the callee (dlopen runs constructors). */
	if (!e || (strcmp(e->path, "[stack]") != 0 &&
		   regs->rsp - e->start < REMCALL_STACK_NEED + REMCALL_REDZONE + (64u << 10))) {
		snprintf(why, cap, "thread %d has too little stack left for the call", (int)tid);
		return -1;
	}
	if (stack_bad(p, tid, regs->rsp, regs->rip, regs, &name)) {
		snprintf(why, cap, "thread %d is inside %s", (int)tid, name);
		return -1;
	}
	if ((long)regs->orig_rax >= 0 && ((long)regs->rax == -EINTR ||
	    ((long)regs->rax <= -512 && (long)regs->rax >= -516))) {
		uint64_t a[6] = { regs->rdi, regs->rsi, regs->rdx, regs->r10, regs->r8, regs->r9 };

		if (!restartable((long)regs->orig_rax, a)) {
			snprintf(why, cap, "thread %d is in system call %ld, which does not restart exactly",
				 (int)tid, (long)regs->orig_rax);
			return -1;
		}
	}
	return 0;
}
