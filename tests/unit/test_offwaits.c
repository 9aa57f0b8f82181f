/*
 * test_offwaits.c — the off-CPU bookkeeping (attach/source/offwaits.c) on
 * event sequences written here as the rings give them, out of order
 * across rings: a wait from switch-out to switch-in with its stack, state
 * and waker; a wait whose sample was lost gets no stack, never an older
 * one; a preemption; a wait begun before the window; one still going at
 * its end; events past the handling point kept for later; a newborn
 * thread's first switch-in is no wait. Also the tracepoint's states, the
 * tracefs format parser, and who woke a thread by the waker's chain.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attach/perf/kchain.h"
#include "attach/perf/tracefs.h"
#include "attach/source/offwaits.h"

#define MAXW 16

static struct offwait got[MAXW];
static uint64_t got_first_id[MAXW], got_first_wid[MAXW];
static int ngot;

static void emit(void *ctx, const struct offwait *w)
{
	(void)ctx;
	assert_true(ngot < MAXW);
	got[ngot] = *w;
	got_first_id[ngot] = w->ids ? w->ids[0] : 0;
	got_first_wid[ngot] = w->wids ? w->wids[0] : 0;
	ngot++;
}

/* A stack of one id. */
static uint64_t *stack1(uint64_t id)
{
	uint64_t *v = malloc(sizeof(*v));

	assert_non_null(v);
	*v = id;
	return v;
}

static void push(struct offwaits *w, uint8_t kind, uint64_t time, uint32_t tid, int8_t state,
		 uint64_t id)
{
	struct offwait_ev e;

	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.time = time;
	e.tid = tid;
	e.state = state;
	if (id) {
		e.ids = stack1(id);
		e.nids = 1;
	}
	offwaits_push(w, &e);
}

static void wake(struct offwaits *w, uint64_t time, uint32_t tid, uint32_t wtid, uint64_t id)
{
	struct offwait_ev e;

	memset(&e, 0, sizeof(e));
	e.kind = OFFEV_WAKE;
	e.time = time;
	e.tid = tid;
	e.wpid = 1;
	e.wtid = wtid;
	e.waker = "producer";
	if (id) {
		e.ids = stack1(id);
		e.nids = 1;
	}
	offwaits_push(w, &e);
}

static void test_wait(void **state)
{
	struct offwaits w;

	(void)state;
	ngot = 0;
	offwaits_init(&w, 1000, emit, NULL);
	/* As two rings give them: the in record (another CPU's ring) before the out. */
	push(&w, OFFEV_IN, 5000, 7, -1, 0);
	wake(&w, 4000, 7, 9, 99);
	push(&w, OFFEV_OUT, 2010, 7, -1, 0);
	push(&w, OFFEV_SAMPLE, 2000, 7, OFFWAIT_SLEEPING, 42);
	offwaits_run(&w, 3000);
	assert_int_equal(ngot, 0); /* the wake and the in are past 3000: kept */
	offwaits_run(&w, 6000);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].tid, 7);
	assert_int_equal(got[0].ns, 5000 - 2000); /* from the sample: the scheduler's instant */
	assert_int_equal(got[0].state, OFFWAIT_SLEEPING);
	assert_int_equal(got_first_id[0], 42);
	assert_string_equal(got[0].waker, "producer");
	assert_int_equal(got[0].wtid, 9);
	assert_int_equal(got_first_wid[0], 99);
	assert_false(got[0].before);
	/* The next wait's sample is lost: no stack (not 42 again), no old waker. */
	push(&w, OFFEV_OUT, 7000, 7, -1, 0);
	push(&w, OFFEV_IN, 8000, 7, -1, 0);
	/* A preemption. */
	push(&w, OFFEV_SAMPLE, 9000, 7, OFFWAIT_PREEMPTED, 43);
	{
		struct offwait_ev e;

		memset(&e, 0, sizeof(e));
		e.kind = OFFEV_OUT;
		e.time = 9001;
		e.tid = 7;
		e.preempt = 1;
		offwaits_push(&w, &e);
	}
	push(&w, OFFEV_IN, 9500, 7, -1, 0);
	offwaits_run(&w, 10000);
	assert_int_equal(ngot, 3);
	assert_int_equal(got[1].ns, 1000);
	assert_null(got[1].ids);
	assert_null(got[1].waker);
	assert_int_equal(got[1].state, OFFWAIT_WAITING);
	assert_int_equal(got[2].state, OFFWAIT_PREEMPTED);
	assert_int_equal(got_first_id[2], 43);
	assert_int_equal(w.st.no_stack, 1);
	/* Another thread of ours leaves its CPU for 7 (the tracepoint's next_pid): 7's wait ends
	   then, when it is picked, not at its switch-in record after the switching. */
	push(&w, OFFEV_SAMPLE, 9600, 7, OFFWAIT_SLEEPING, 46);
	push(&w, OFFEV_OUT, 9601, 7, -1, 0);
	{
		struct offwait_ev e;

		memset(&e, 0, sizeof(e));
		e.kind = OFFEV_SAMPLE;
		e.time = 9900;
		e.tid = 8;
		e.state = OFFWAIT_SLEEPING;
		e.next_tid = 7;
		offwaits_push(&w, &e);
	}
	push(&w, OFFEV_IN, 9905, 7, -1, 0);
	offwaits_run(&w, 10000);
	assert_int_equal(ngot, 4);
	assert_int_equal(got[3].tid, 7);
	assert_int_equal(got[3].ns, 300);
	assert_int_equal(got_first_id[3], 46);
	/* The first three ended at their switch-in records; the fourth at its pick. */
	assert_int_equal(w.st.at_switch_in, 3);
	ngot = 3;
	/* A sample without its out record (not yet enabled, or lost) still opens a wait. */
	push(&w, OFFEV_SAMPLE, 11000, 7, OFFWAIT_DISK, 44);
	offwaits_end(&w, 12500);
	assert_int_equal(ngot, 5); /* and 8's, begun at its sample */
	assert_int_equal(got[3].ns, 1500); /* still going at the end */
	assert_int_equal(got[3].state, OFFWAIT_DISK);
	assert_int_equal(got[4].tid, 8);
	assert_int_equal(got[4].ns, 12500 - 9900);
	offwaits_release(&w);
}

static void test_before_and_newborn(void **state)
{
	struct offwaits w;

	(void)state;
	ngot = 0;
	offwaits_init(&w, 0, emit, NULL);
	offwaits_present(&w, 3, OFFWAIT_SLEEPING, stack1(77), 1); /* asleep at the start */
	offwaits_present(&w, 4, OFFWAIT_PREEMPTED, NULL, 0);      /* running at the start */
	offwaits_present(&w, 5, OFFWAIT_DISK, stack1(88), 1);     /* never switched */
	offwaits_start(&w, 1000); /* the window begins once they are read */
	push(&w, OFFEV_IN, 1500, 3, -1, 0);
	push(&w, OFFEV_SAMPLE, 1200, 4, OFFWAIT_SLEEPING, 45);
	push(&w, OFFEV_OUT, 1201, 4, -1, 0);
	push(&w, OFFEV_IN, 1800, 4, -1, 0);
	push(&w, OFFEV_IN, 1900, 6, -1, 0); /* born during the window: no wait */
	offwaits_end(&w, 3000);
	assert_int_equal(ngot, 2);
	assert_int_equal(got[0].tid, 3);
	assert_true(got[0].before);
	assert_int_equal(got[0].ns, 500);
	assert_int_equal(got_first_id[0], 77);
	assert_int_equal(got[1].tid, 4);
	assert_false(got[1].before);
	assert_int_equal(got[1].ns, 600);
	assert_true(offwaits_seen(&w, 3));
	assert_false(offwaits_seen(&w, 5)); /* the caller's to weigh */
	assert_int_equal(offwaits_unswitched(&w, 3, 2000), -1); /* switched: not such a thread */
	assert_int_equal(offwaits_unswitched(&w, 5, 1900), 0);
	assert_int_equal(ngot, 3);
	assert_int_equal(got[2].ns, 1900);
	assert_int_equal(got[2].state, OFFWAIT_DISK);
	assert_true(got[2].before);
	assert_int_equal(got_first_id[2], 88);
	assert_int_equal(offwaits_unswitched(&w, 5, 1900), -1); /* once */
	offwaits_release(&w);
}

static void test_states_and_format(void **state)
{
	static const char fmt[] =
		"name: sched_switch\nID: 316\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
		"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
		"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
		"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n";
	struct tracefs_field f;

	(void)state;
	assert_int_equal(offwait_state_of(0x100), OFFWAIT_PREEMPTED);
	assert_int_equal(offwait_state_of(0), OFFWAIT_PREEMPTED);
	assert_int_equal(offwait_state_of(1), OFFWAIT_SLEEPING);
	assert_int_equal(offwait_state_of(2), OFFWAIT_DISK);
	assert_int_equal(offwait_state_of(4), OFFWAIT_STOPPED);
	assert_int_equal(offwait_state_of(0x40), OFFWAIT_OTHER);
	assert_int_equal(tracefs_parse_field(fmt, "prev_state", &f), 0);
	assert_int_equal(f.offset, 32);
	assert_int_equal(f.size, 8);
	assert_int_equal(tracefs_parse_field(fmt, "prev_comm", &f), 0);
	assert_int_equal(f.offset, 8);
	assert_int_equal(tracefs_parse_field(fmt, "pid", &f), -1); /* not prev_pid's tail */
	assert_int_equal(tracefs_parse_field(fmt, "next_pid", &f), 0);
	assert_int_equal(f.offset, 56);
	assert_int_equal(tracefs_parse_field("\tfield:int x;\toffset:zz;\tsize:4;\n", "x", &f), -1);
	assert_int_equal(tracefs_parse_field("field:int x", "x", &f), -1);
	assert_int_equal(tracefs_parse_field("", "x", &f), -1);
}

/* Who woke a thread, by the waker's kernel chain (innermost first). */
static void test_wake_context(void **state)
{
	static const char *const timer[] = { "try_to_wake_up", "hrtimer_wakeup",
		"__hrtimer_run_queues", "hrtimer_interrupt", "__sysvec_apic_timer_interrupt",
		"sysvec_apic_timer_interrupt", "asm_sysvec_apic_timer_interrupt" };
	static const char *const nic[] = { "try_to_wake_up", "ep_poll_callback",
		"sock_def_readable", "tcp_v4_rcv", "net_rx_action", "handle_softirqs",
		"irq_exit_rcu", "common_interrupt", "asm_common_interrupt" };
	static const char *const loopback[] = { "try_to_wake_up", "ep_poll_callback",
		"sock_def_readable", "tcp_v4_rcv", "net_rx_action", "handle_softirqs",
		"do_softirq", "__local_bh_enable_ip", "__dev_queue_xmit", "tcp_sendmsg",
		"__x64_sys_sendto", "do_syscall_64", "entry_SYSCALL_64_after_hwframe" };
	static const char *const futex[] = { "try_to_wake_up", "wake_up_q", "futex_wake",
		"do_futex", "__x64_sys_futex", "do_syscall_64", "entry_SYSCALL_64_after_hwframe" };

	(void)state;
	assert_int_equal(kchain_context(timer, 7), KCHAIN_TIMER);
	assert_int_equal(kchain_context(nic, 9), KCHAIN_IRQ);
	assert_int_equal(kchain_context(loopback, 13), KCHAIN_TASK); /* the sender's doing */
	assert_int_equal(kchain_context(futex, 7), KCHAIN_TASK);
	assert_int_equal(kchain_context(NULL, 0), KCHAIN_TASK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait),
		cmocka_unit_test(test_before_and_newborn),
		cmocka_unit_test(test_states_and_format),
		cmocka_unit_test(test_wake_context),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
