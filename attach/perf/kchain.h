#ifndef CPROF_PERF_KCHAIN_H
#define CPROF_PERF_KCHAIN_H
/*
 * kchain — a sample's kernel call chain as names, from /proc/kallsyms
 * (unwind/kallsyms.h): what the perf and off-CPU sources put below a user
 * stack, and how the off-CPU source tells a wake-up made by an interrupt
 * (a timer's expiry, a device) from one made by the thread that ran.
 *
 * Invariants: context markers (PERF_CONTEXT_*, the top 4095 values) and
 * addresses the kernel's table does not name are left out; at most cap
 * names; nothing is allocated.
 */
#include "attach/perf/ring.h"

/*
 * The kernel part of s's call chain, innermost first, into names[0..cap):
 * how many (0 without a chain, or without kallsyms).
 */
unsigned kchain_names(const struct perf_sample *s, const char **names, unsigned cap);

/* What woke a thread in interrupt context, by the waker's chain. */
enum kchain_ctx {
	KCHAIN_TASK,  /* the thread that ran: a system call, its own code */
	KCHAIN_TIMER, /* a timer's expiry (hrtimer_wakeup and kin) */
	KCHAIN_IRQ,   /* an interrupt or softirq (a device, the network...) */
};
enum kchain_ctx kchain_context(const char *const *names, unsigned n);

#endif
