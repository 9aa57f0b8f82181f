#ifndef CPROF_PICK_H
#define CPROF_PICK_H
/*
 * pick — which thread of a process a remote call that loads a library may
 * run on, and whether any may now. Invariant: no call is made while any
 * thread asleep has allocator, loader or stdio frames on its stack (it
 * may hold a lock dlopen needs), and never on a thread inside them; the
 * chosen thread is checked again once stopped (pick_vet(), the remote
 * call's vet), from its real registers.
 *
 * A stack (at most PICK_SCAN bytes above sp, within its mapping, copied
 * without a stop) is unwound by CFI (unwind/unwinder.h); a walk that
 * reaches the thread's start is trusted alone. Any other stack is also
 * scanned word by word: each word that points into an executable file
 * mapping just after a call instruction (read in the object's file) is
 * taken for a return address. Frames are named by the objects' symbols;
 * every frame in an object other than libc and the executable that
 * defines malloc (jemalloc, tcmalloc) counts as an allocator frame. A
 * stale return address found by the scan can only make the check
 * stricter, never let a lock holder through.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PICK_SCAN (32u << 10)
#define PICK_RETRY_MS 50
#define PICK_DEADLINE_MS 5000

struct pick;

/* State for process pid (its objects, read once). NULL with *why on failure. */
struct pick *pick_new(pid_t pid, const char **why);
void pick_free(struct pick *p);

/*
 * One look at every thread: 1 and *tid a thread to call on (a sleeper in
 * a call that restarts exactly first, else a running one); 0 when a
 * sleeping thread has such frames (blame says which thread and frame);
 * -1 when no thread qualifies (blame says why).
 */
int pick_once(struct pick *p, pid_t *tid, char *blame, size_t cap);

/* remcall_vet_fn (remcall.h) with ctx a struct pick. */
struct user_regs_struct;
int pick_vet(void *ctx, pid_t pid, pid_t tid, const struct user_regs_struct *regs, char *why,
	     size_t cap);

#endif
