/*
 * auto.c — the cpu kind's source: the choice between the two samplers.
 * --sampler perf or ptrace is taken as asked; auto (the default) takes
 * perf events when the kernel allows them for this user and target, and
 * the ptrace sampler otherwise, a refusal being a reason and never an
 * error. The choice and its reason go on the capture line, into the
 * profile (a comment) and into the report (--summary json, --stats).
 */
#include <stdio.h>
#include <string.h>

#include "attach/capture/target.h"
#include "attach/perf/perfaccess.h"
#include "attach/perf/events.h"
#include "attach/source/perfsrc.h"
#include "attach/source/source.h"
#include "common/err.h"
#include "model/profile.h"

/* Record the choice in the report and the profile. */
static void auto_note(const char *sampler, const char *why, struct profile *prof,
		      struct capture_report *rep)
{
	char line[260];

	rep->sampler = sampler;
	snprintf(rep->sampler_why, sizeof(rep->sampler_why), "%s", why);
	snprintf(line, sizeof(line), "sampler: %s (%s)", sampler, why);
	if (prof)
		profile_add_comment(prof, line);
}

static int capture_auto(const struct capture_req *q, struct profile **out,
			struct capture_report *rep)
{
	struct capture_req r = *q;
	struct perf_access a;
	char how[260], why[200];
	int refused = 0, code;

	if (q->sampler == SAMPLER_PTRACE) {
		snprintf(why, sizeof(why), "--sampler ptrace");
	} else if (q->children && (perf_access_probe(&a), a.scope != PERF_SCOPE_CPU)) {
		/* Per-thread events cannot follow new processes into the family. */
		if (q->sampler == SAMPLER_PERF) {
			error("--children with perf events needs CPU-wide events (%.150s): leave "
			      "--sampler out or say ptrace", a.scope ? "only per-thread ones are "
			      "allowed here" : a.why);
			return EXIT_USAGE;
		}
		snprintf(why, sizeof(why), "--children with perf needs CPU-wide events: %.150s",
			 a.scope ? "only per-thread ones are allowed" : a.why);
	} else {
		if (!q->children)
			perf_access_probe(&a);
		snprintf(how, sizeof(how), "sampler perf (%s)", a.why);
		r.how = how;
		code = perf_capture(&r, &a, &refused, out, rep);
		if (!refused) {
			if (code == EXIT_OK)
				auto_note("perf", a.why, *out, rep);
			return code;
		}
		snprintf(why, sizeof(why), "%s", rep->sampler_why);
		if (q->sampler == SAMPLER_PERF) {
			error("cannot sample %d (%s) with perf events: %s", (int)q->t->pid, q->t->comm,
			      why);
			return EXIT_ATTACH;
		}
	}
	snprintf(how, sizeof(how), "sampler ptrace (%s)", why);
	r.how = how;
	code = source_ptrace.capture(&r, out, rep);
	if (code == EXIT_OK)
		auto_note("ptrace", why, *out, rep);
	return code;
}

const struct source source_auto = {
	.name = "auto",
	.capture = capture_auto,
	.can = SOURCE_CLOCK | SOURCE_CHILDREN | SOURCE_SAMPLER,
};
