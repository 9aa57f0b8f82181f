/*
 * kchain.c — kernel call chains named (kchain.h). An interrupt's frames
 * sit between the interrupted code and the handler: the chain, read from
 * the wake-up outwards, meets the timer's or the device's function before
 * the interrupt's entry (asm_sysvec_*, asm_common_interrupt, irq_exit_rcu)
 * or ksoftirqd; softirqs a thread runs itself on re-enabling them
 * (do_softirq from __local_bh_enable_ip: a loopback send's receive side)
 * are that thread's doing.
 */
#include <string.h>

#include "attach/perf/kchain.h"
#include "unwind/kallsyms.h"

unsigned kchain_names(const struct perf_sample *s, const char **names, unsigned cap)
{
	const struct kallsyms *k = kallsyms_get();
	unsigned n = 0;
	uint64_t ip, i;

	if (!k || !s->chain)
		return 0;
	for (i = 0; i < s->nchain && n < cap; i++) {
		memcpy(&ip, s->chain + 8 * i, sizeof(ip));
		if (ip >= (uint64_t)-4095)
			continue;
		if ((names[n] = kallsyms_name(k, ip)))
			n++;
	}
	return n;
}

static int has_prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

enum kchain_ctx kchain_context(const char *const *names, unsigned n)
{
	unsigned i;
	int timer = 0;

	for (i = 0; i < n; i++) {
		const char *f = names[i];

		if (!strcmp(f, "hrtimer_wakeup") || !strcmp(f, "process_timeout") ||
		    has_prefix(f, "__hrtimer_run_queues") || !strcmp(f, "call_timer_fn"))
			timer = 1;
		/* A hardware interrupt's entry, or softirqs left to their thread. */
		if (has_prefix(f, "asm_sysvec_") || has_prefix(f, "asm_common_interrupt") ||
		    has_prefix(f, "sysvec_") || !strcmp(f, "irq_exit_rcu") ||
		    has_prefix(f, "run_ksoftirqd"))
			return timer ? KCHAIN_TIMER : KCHAIN_IRQ;
		/*
		 * Softirqs run by the thread itself as it leaves a section that
		 * held them off (a loopback send's receive side runs here): its
		 * doing, unless a timer's.
		 */
		if (has_prefix(f, "do_softirq") || has_prefix(f, "__local_bh_enable_ip"))
			return timer ? KCHAIN_TIMER : KCHAIN_TASK;
		/* The system call's entry: the thread's own doing. */
		if (has_prefix(f, "entry_SYSCALL") || has_prefix(f, "do_syscall"))
			return timer ? KCHAIN_TIMER : KCHAIN_TASK;
	}
	return timer ? KCHAIN_TIMER : KCHAIN_TASK;
}
