/*
 * report.c — messages about captures. JSON is written by hand: the few
 * fields are numbers and strings, which are escaped here (a path, or a
 * label key the program chose, may hold any byte but NUL). What goes to
 * the terminal (--stats, --top) has its strings' control bytes escaped
 * (common/sanitize.h), as err.c's lines do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/kinds/kinds.h"
#include "attach/cli/options.h"
#include "attach/cli/report.h"
#include "attach/capture/target.h"
#include "attach/perf/events.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/sanitize.h"
#include "model/profile.h"
#include "writer/top.h"

#define JSON_MAX_KEYS 64 /* label keys listed; a program may invent more, which are cut */

/* The noun for a count of n: one, or many. */
#define PLURAL(n, one, many) ((n) == 1 ? (one) : (many))

void report_written(const struct options *o, const struct capture_report *rep, const char *path,
		    const struct profile *prof)
{
	const char *where = o->output && !strcmp(o->output, "-") ? "the profile to standard output"
			    : path ? path : "the profile to the push spool";

	if (o->quiet)
		return;
	if (rep->stop_signal)
		note("stopped early by %s", strsignal(rep->stop_signal));
	if (rep->offcpu)
		note("wrote %s: %llu %s from %llu %s over %.2f s", where,
		     (unsigned long long)rep->samples, PLURAL(rep->samples, "wait", "waits"),
		     (unsigned long long)rep->threads, PLURAL(rep->threads, "thread", "threads"),
		     (double)rep->duration_ns / 1e9);
	else if ((rep->ptrace || rep->perf) && rep->processes)
		note("wrote %s: %llu %s from %llu %s in %llu %s over %.2f s", where,
		     (unsigned long long)rep->samples, PLURAL(rep->samples, "sample", "samples"),
		     (unsigned long long)rep->threads, PLURAL(rep->threads, "thread", "threads"),
		     (unsigned long long)rep->processes, PLURAL(rep->processes, "process", "processes"),
		     (double)rep->duration_ns / 1e9);
	else if (rep->ptrace || rep->perf)
		note("wrote %s: %llu %s from %llu %s over %.2f s", where,
		     (unsigned long long)rep->samples, PLURAL(rep->samples, "sample", "samples"),
		     (unsigned long long)rep->threads, PLURAL(rep->threads, "thread", "threads"),
		     (double)rep->duration_ns / 1e9);
	else if (rep->processes)
		note("wrote %s: %llu %s from %llu %s%s", where, (unsigned long long)rep->samples,
		     PLURAL(rep->samples, "stack", "stacks"), (unsigned long long)rep->processes,
		     PLURAL(rep->processes, "process", "processes"),
		     o->duration_given ? ", the change over the window" : "");
	else
		note("wrote %s: %llu %s%s", where, (unsigned long long)rep->samples,
		     PLURAL(rep->samples, "stack", "stacks"),
		     o->duration_given ? ", the change over the window" : "");
	/* Collapsed stacks carry bare numbers: say what they count. */
	if (prof && o->format->bit == FORMAT_FOLDED) {
		const struct profile_value_type *vt = profile_sample_types(prof);
		size_t v = top_default_value(prof);

		note("its values are %s in %s", profile_string(prof, vt[v].type),
		     profile_string(prof, vt[v].unit));
	}
}

/* "partial stacks by cause: no unwind info 12, stack not copied 1" */
static void report_partial(const struct record_stats *rec)
{
	const char *sep = "";
	unsigned c;

	if (!rec->partial)
		return;
	fprintf(stderr, "cprof-attach: stats: partial stacks by cause:");
	for (c = 1; c < UNWIND_NCAUSES; c++) {
		if (!rec->partial_by[c])
			continue;
		fprintf(stderr, "%s %s %llu", sep, unwind_cause_name(c),
			(unsigned long long)rec->partial_by[c]);
		sep = ",";
	}
	fputc('\n', stderr);
}

/*
 * "source lines: 812 addresses, 790 with lines from 4 objects' debug
 * information (800 from the line cache, 12 looked up in DWARF), in 35.2 ms
 * (30.1 ms CPU)"
 */
static void report_lines(const struct record_stats *rec)
{
	if (!rec->lines_addrs)
		return;
	fprintf(stderr,
		"cprof-attach: stats: source lines: %llu addresses, %llu with lines from %llu "
		"objects' debug information (%llu from the line cache, %llu looked up in DWARF), "
		"in %.1f ms (%.1f ms CPU)\n",
		(unsigned long long)rec->lines_addrs, (unsigned long long)rec->lines_found,
		(unsigned long long)rec->lines_objects, (unsigned long long)rec->lines_cached,
		(unsigned long long)rec->lines_dwarf, rec->lines_ns / 1e6, rec->lines_cpu_ns / 1e6);
}

/* An off-CPU capture's figures (offcpusrc.c). */
static void report_offcpu(const struct capture_report *r)
{
	const struct offcpu_stats *f = &r->off;

	fprintf(stderr,
		"cprof-attach: stats: %llu switches of %llu threads (%s), %llu waits (%llu under "
		"--min-wait, %llu without their stack, %llu threads asleep throughout, %llu "
		"stacks of threads asleep at the start read from memory), %llu "
		"with a waker of %llu wake-ups read, %llu picks read, %llu waits ended at their "
		"switch-in unpicked; lost: %llu switch records, "
		"%llu switch-out stacks, %llu wake-ups, %llu picks, %llu events past the queue; "
		"throttled %llu times\n",
		(unsigned long long)f->switches, (unsigned long long)f->threads_opened,
		f->tracepoint ? "sched_switch" : "context-switches event",
		(unsigned long long)f->waits, (unsigned long long)f->short_waits,
		(unsigned long long)f->no_stack, (unsigned long long)f->unswitched,
		(unsigned long long)f->asleep_stacks,
		(unsigned long long)f->woken, (unsigned long long)f->wakes,
		(unsigned long long)f->picks, (unsigned long long)f->unpicked,
		(unsigned long long)f->lost_switches, (unsigned long long)f->lost_stacks,
		(unsigned long long)f->lost_wakes, (unsigned long long)f->lost_picks,
		(unsigned long long)f->dropped,
		(unsigned long long)f->throttled);
	fprintf(stderr,
		"cprof-attach: stats: %llu stacks, %.1f frames on average, %llu partial, %llu "
		"with kernel frames, %u stack bytes a sample; own CPU %.3fs over %.3fs\n",
		(unsigned long long)r->rec.stacks,
		r->rec.stacks ? (double)r->rec.frames / (double)r->rec.stacks : 0.0,
		(unsigned long long)r->rec.partial, (unsigned long long)f->kernel_stacks,
		f->stack_bytes, r->cpu_self_s, (double)r->duration_ns / 1e9);
	report_partial(&r->rec);
}

/* The perf source's lines. */
static void report_perf(const struct capture_report *r)
{
	const struct perf_stats *p = &r->pf;

	fprintf(stderr,
		"cprof-attach: stats: perf events (%s scope): %llu samples of the target, %llu "
		"of other processes passed over, %llu lost (a ring was full), %llu throttled, "
		"%llu without user registers, %llu of threads past their exit (no id), %llu rings found corrupt; %u rings of %llu KiB, "
		"%u bytes of stack a sample, %llu passes over the rings\n",
		p->scope == PERF_SCOPE_CPU ? "CPU" : "task", (unsigned long long)p->samples,
		(unsigned long long)p->others, (unsigned long long)p->lost,
		(unsigned long long)p->throttled, (unsigned long long)p->no_regs,
		(unsigned long long)p->exiting,
		(unsigned long long)p->corrupt, p->rings, (unsigned long long)p->ring_bytes >> 10,
		p->stack_bytes, (unsigned long long)p->drains);
	if (p->threads_opened)
		fprintf(stderr, "cprof-attach: stats: %llu threads given events at the start\n",
			(unsigned long long)p->threads_opened);
	if (p->altstack || p->altstack_stale)
		fprintf(stderr,
			"cprof-attach: stats: %llu samples on an alternate signal stack, their "
			"interrupted stack read from memory (%llu refused: the thread had moved on)\n",
			(unsigned long long)p->altstack, (unsigned long long)p->altstack_stale);
	if (p->holes || p->holes_stale)
		fprintf(stderr,
			"cprof-attach: stats: %llu samples whose stack copy ended at an untouched page, "
			"the stack above read from memory (%llu refused: the thread had moved on)\n",
			(unsigned long long)p->holes, (unsigned long long)p->holes_stale);
	fprintf(stderr,
		"cprof-attach: stats: CPU: the %s %.1fms, the samples' periods %.1fms; "
		"%llu threads' samples scaled to their clocks (x%.2f..x%.2f); threads that ended "
		"%.1fms, %.1fms of it in none sampled ([short-lived threads]); live threads never "
		"sampled %.1fms; not seen by per-thread events (kernel) %.1fms; the kernel's side "
		"of the threads' waits %.1fms (%.1fus a wait, %.1fus a timer's sleep, measured "
		"here)\n",
		r->processes > 1 ? "processes' clocks (those that ran on to the end)" : "process's clock",
		p->cpu_process_ns / 1e6, p->cpu_sampled_ns / 1e6,
		(unsigned long long)p->threads_scaled, p->scale_min, p->scale_max,
		p->cpu_ended_ns / 1e6, p->cpu_short_ns / 1e6, p->cpu_unsampled_ns / 1e6,
		p->cpu_unseen_ns / 1e6, p->cpu_waits_ns / 1e6, p->wait_cost_ns / 1e3,
		p->timer_cost_ns / 1e3);
	fprintf(stderr,
		"cprof-attach: stats: %llu stacks, %.1f frames on average, %llu truncated, %llu "
		"partial; own CPU %.3fs over %.3fs\n",
		(unsigned long long)r->rec.stacks,
		r->rec.stacks ? (double)r->rec.frames / (double)r->rec.stacks : 0.0,
		(unsigned long long)r->rec.truncated, (unsigned long long)r->rec.partial,
		r->cpu_self_s, (double)r->duration_ns / 1e9);
	report_partial(&r->rec);
}

void report_stats(const struct capture_report *r)
{
	const struct sampler_results *sm = &r->sm;

	report_lines(&r->rec);
	if (r->sampler) {
		char why[sizeof(r->sampler_why) * 4];

		/* The reason may quote a path or a message from the system: escaped, as err.c's. */
		sanitize_str(why, sizeof(why), r->sampler_why);
		fprintf(stderr, "cprof-attach: stats: sampler %s: %s\n", r->sampler, why);
	}
	if (r->perf) {
		report_perf(r);
		return;
	}
	if (r->offcpu) {
		report_offcpu(r);
		return;
	}
	if (!r->ptrace) {
		fprintf(stderr,
			"cprof-attach: stats: %llu stacks read from libcprof.so's segment, %llu left "
			"out as torn, %llu samples the shim dropped (table full); own CPU %.3fs\n",
			(unsigned long long)r->samples, (unsigned long long)r->seg_torn,
			(unsigned long long)r->seg_dropped, r->cpu_self_s);
		return;
	}
	fprintf(stderr,
		"cprof-attach: stats: %llu samples (%llu lost to a full queue), %llu threads seen, "
		"%llu sampled; ticks: %llu of %llu taken (%llu missed while the sampler was "
		"busy or waited for a CPU%s)\n",
		(unsigned long long)sm->samples, (unsigned long long)sm->lost,
		(unsigned long long)sm->stats.threads_seen, (unsigned long long)r->threads,
		(unsigned long long)sm->ticks, (unsigned long long)(sm->ticks + sm->ticks_missed),
		(unsigned long long)sm->ticks_missed,
		sm->niced ? "; sampler at nice -10" : "");
	fprintf(stderr,
		"cprof-attach: stats: pause per stopped sample p50 %.1fus p99 %.1fus max %.1fus "
		"(%llu stops, %llu timed out, %llu taken when the thread next had a CPU, %llu "
		"found asleep: their CPU carried on, %llu of %llu in user code stopped late and %llu "
		"slid to a later system call: carried on too); %llu sleeping threads read without a stop "
		"(%llu read again: they woke during the copy; %llu stopped after three such; "
		"%llu with their kernel stack%s)\n",
		sm->pause_p50_ns / 1e3, sm->pause_p99_ns / 1e3, sm->stats.pause_ns_max / 1e3,
		(unsigned long long)sm->stats.stops, (unsigned long long)sm->stats.stop_timeouts,
		(unsigned long long)sm->stats.deferred, (unsigned long long)sm->found_asleep,
		(unsigned long long)sm->stats.user_stops_late, (unsigned long long)sm->stats.user_stops,
		(unsigned long long)sm->stats.slid,
		(unsigned long long)sm->stats.blocked_reads,
		(unsigned long long)sm->stats.torn_reads,
		(unsigned long long)sm->stats.torn_stops, (unsigned long long)sm->stats.kstacks,
		sm->stats.kstack_refused ? ", the kernel refused them here" : "");
	fprintf(stderr,
		"cprof-attach: stats: %llu signals passed on during stops, %llu EINTRs turned into "
		"restarts, %.1fms CPU of threads never found running, %.1fms of threads no read "
		"of the thread list saw ([short-lived threads]) of the %s %.1fms, "
		"%.1fms the kernel's side of the threads' waits (%.1fus a wait, %.1fus a timer's "
		"sleep, measured here), "
		"%llu thread CPU clocks read, %llu idle "
		"threads found unchanged, %llu reads of the thread list, %llu samples on an "
		"alternate signal stack, %llu zombies reaped while an exec held a seize\n",
		(unsigned long long)sm->stats.signals_passed, (unsigned long long)sm->stats.eintr_fixed,
		sm->cpu_unattributed_ns / 1e6, sm->cpu_short_ns / 1e6,
		r->processes > 1 ? "processes'" : "process's", sm->cpu_process_ns / 1e6,
		sm->cpu_waits_ns / 1e6, sm->wait_cost_ns / 1e3, sm->timer_cost_ns / 1e3,
		(unsigned long long)sm->threads_read,
		(unsigned long long)sm->stats.repeats, (unsigned long long)sm->stats.rescans,
		(unsigned long long)sm->stats.altstack_copies,
		(unsigned long long)sm->stats.exec_rescues);
	fprintf(stderr,
		"cprof-attach: stats: %llu stacks, %.1f frames on average, %llu truncated, %llu "
		"partial, %llu completed by frame-pointer recovery; own CPU %.3fs over %.3fs\n",
		(unsigned long long)r->rec.stacks,
		r->rec.stacks ? (double)r->rec.frames / (double)r->rec.stacks : 0.0,
		(unsigned long long)r->rec.truncated, (unsigned long long)r->rec.partial,
		(unsigned long long)r->rec.recovered, r->cpu_self_s, (double)r->duration_ns / 1e9);
	report_partial(&r->rec);
	if (r->rec.not_unwound)
		fprintf(stderr, "cprof-attach: stats: %llu samples not unwound: queued when the "
			"capture was stopped by a signal\n", (unsigned long long)r->rec.not_unwound);
}

int report_top_fd(const struct options *o)
{
	return (o->output && !strcmp(o->output, "-")) || o->summary_json ? STDERR_FILENO
									  : STDOUT_FILENO;
}

void report_top(const struct profile *prof, unsigned n, int fd)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	if (top_write(prof, top_default_value(prof), n, &b) == 0 && b.len &&
	    write(fd, b.data, b.len) < 0) {
		/* the stream is gone; nothing to do */
	}
	buf_release(&b);
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ,"label_keys":[...]: the distinct keys of prof's sample labels, sorted. 0 or -1. */
static int json_label_keys(struct buf *b, const struct profile *prof)
{
	const char *keys[JSON_MAX_KEYS];
	const struct profile_sample *s;
	size_t n = 0, ns = 0, i, j, k;
	int r;

	if (prof)
		s = profile_samples(prof, &ns);
	for (i = 0; i < ns; i++)
		for (j = 0; j < s[i].nlabels; j++) {
			const char *key = profile_string(prof, s[i].labels[j].key);

			for (k = 0; k < n && strcmp(keys[k], key); k++)
				;
			if (k == n && n < JSON_MAX_KEYS)
				keys[n++] = key;
		}
	qsort(keys, n, sizeof(*keys), by_string);
	r = buf_printf(b, ",\"label_keys\":[");
	for (i = 0; i < n && r == 0; i++) {
		if (i)
			r = buf_printf(b, ",");
		if (r == 0)
			r = buf_quote(b, keys[i], 1);
	}
	return r ? r : buf_printf(b, "]");
}

/*
 * ,"stacks":N,"truncated":N,"partial_stacks":N,"partial_by_cause":{...}:
 * the stacks' completeness, apart from "partial" (the capture's: the
 * process went away during it). 0 or -1.
 */
static int json_stacks(struct buf *b, const struct record_stats *rec)
{
	const char *sep = "";
	unsigned c;
	int r;

	r = buf_printf(b, ",\"stacks\":%llu,\"truncated\":%llu,\"partial_stacks\":%llu,"
		       "\"partial_by_cause\":{",
		       (unsigned long long)rec->stacks, (unsigned long long)rec->truncated,
		       (unsigned long long)rec->partial);
	for (c = 1; r == 0 && c < UNWIND_NCAUSES; c++) {
		if (!rec->partial_by[c])
			continue;
		r = buf_printf(b, "%s", sep);
		if (r == 0)
			r = buf_quote(b, unwind_cause_name(c), 1);
		if (r == 0)
			r = buf_printf(b, ":%llu", (unsigned long long)rec->partial_by[c]);
		sep = ",";
	}
	return r == 0 ? buf_printf(b, "}") : r;
}

int report_json_fd(const struct options *o)
{
	return o->output && !strcmp(o->output, "-") ? STDERR_FILENO : STDOUT_FILENO;
}

uint64_t report_lost(const struct capture_report *rep)
{
	return rep->ptrace ? rep->sm.lost + rep->sm.stats.stop_timeouts
	       : rep->perf ? rep->pf.lost
	       : rep->offcpu ? rep->off.lost_switches + rep->off.dropped
	       : rep->seg_dropped;
}

int report_json_open(const struct options *o, const struct target *t,
		     const struct capture_report *rep, const struct profile *prof, const char *path,
		     unsigned number, int code, struct buf *b)
{
	int r;

	r = buf_printf(b, "{\"path\":");
	if (r == 0)
		r = path && (code == EXIT_OK || code == EXIT_PARTIAL) ? buf_quote(b, path, 1)
								       : buf_printf(b, "null");
	if (r == 0)
		r = buf_printf(b, ",\"type\":\"%s\",\"pid\":%d,\"capture\":%u,\"exit\":%d,"
			       "\"samples\":%llu,\"lost\":%llu,\"duration_s\":%.3f,\"threads\":%llu,"
			       "\"start_ns\":%llu,\"partial\":%s",
			       o->kind->name, (int)t->pid, number, code,
			       (unsigned long long)rep->samples,
			       (unsigned long long)report_lost(rep),
			       (double)rep->duration_ns / 1e9, (unsigned long long)rep->threads,
			       (unsigned long long)rep->start_real_ns,
			       rep->gone || rep->execed ? "true" : "false");
	if (r == 0)
		r = json_stacks(b, &rep->rec);
	/* Stacks that go on into the kernel (its call chains, or a sleeper's /proc stack). */
	if (r == 0)
		r = buf_printf(b, ",\"kernel_stacks\":%llu",
			       (unsigned long long)(rep->ptrace ? rep->sm.stats.kstacks
					: rep->perf ? rep->pf.kernel_chains
					: rep->offcpu ? rep->off.kernel_stacks : 0));
	if (r == 0 && rep->offcpu)
		r = buf_printf(b, ",\"switches\":%llu,\"waits_no_stack\":%llu,\"lost_stacks\":%llu,"
			       "\"waits_unpicked\":%llu,\"woken\":%llu,\"states\":%s",
			       (unsigned long long)rep->off.switches,
			       (unsigned long long)rep->off.no_stack,
			       (unsigned long long)rep->off.lost_stacks,
			       (unsigned long long)rep->off.unpicked,
			       (unsigned long long)rep->off.woken,
			       rep->off.tracepoint ? "true" : "false");
	if (r == 0 && rep->sampler) {
		r = buf_printf(b, ",\"sampler\":\"%s\",\"sampler_reason\":", rep->sampler);
		if (r == 0)
			r = buf_quote(b, rep->sampler_why, 1);
	}
	if (r == 0)
		r = json_label_keys(b, prof);
	return r;
}

void report_json(const struct options *o, const struct target *t, const struct capture_report *rep,
		 const struct profile *prof, const char *path, unsigned number, int code)
{
	struct buf b;
	int r;

	buf_init(&b, 1 << 16);
	r = report_json_open(o, t, rep, prof, path, number, code, &b);
	if (r == 0)
		r = buf_printf(&b, "}\n");
	if (r == 0 && write(report_json_fd(o), b.data, b.len) < 0) {
		/* the reader went away; nothing to do */
	}
	buf_release(&b);
}

void report_progress(uint64_t elapsed_ns, uint64_t total_ns, uint64_t samples, uint64_t threads,
		     int done)
{
	char line[160];
	int n;

	if (done)
		n = snprintf(line, sizeof(line), "\r\033[K");
	else
		n = snprintf(line, sizeof(line),
			     "\r\033[Kcprof-attach: %.1fs of %.1fs, %llu samples, %llu threads",
			     elapsed_ns / 1e9, total_ns / 1e9, (unsigned long long)samples,
			     (unsigned long long)threads);
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
		/* nothing to do */
	}
}
