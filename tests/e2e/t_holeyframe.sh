#!/usr/bin/env bash
# sampler: both
# Stacks through untouched stack pages are complete. The holeyframe
# target's threads spin under a 16 KiB frame written only at its lowest
# bytes: the pages above them were never faulted in, and the kernel's copy
# of the user stack for a perf sample stops at the first of them, below
# the callers (every sample "[partial: stack not copied]" before
# attach/perf/stackhole.h). The rest of the stack is read from memory;
# ptrace reads a stopped thread's stack that way already. Bar (issue 26):
# at most 1% of the samples partial; here every stack is expected whole,
# and with perf --stats says how many were completed.
. "$(dirname "$0")/lib.sh"

start_target holeyframe 2
"$ATTACH" -p "$TPID" -d 3s -F 200 -o "$WORK/cpu.pb.gz" -q --stats 2>"$WORK/cpu.stats" ||
	{ cat "$WORK/cpu.stats" >&2; fail "cprof-attach failed"; }
"$PBDUMP" "$WORK/cpu.pb.gz" | awk '/^sample / { split($2, v, ","); s = $0; sub(/.* stack /, "", s); print v[1], s }' >"$WORK/cpu.txt"
all=$(awk '{ n += $1 } END { print n + 0 }' "$WORK/cpu.txt")
spin=$(awk '/holey_spin$/ { n += $1 } END { print n + 0 }' "$WORK/cpu.txt")
whole=$(awk '/^[0-9]+ clone3;start_thread;holey_main;holey_outer;holey_middle;holey_frame;holey_spin$/ { n += $1 } END { print n + 0 }' "$WORK/cpu.txt")
partial=$(awk '/^[0-9]+ \[partial/ { n += $1 } END { print n + 0 }' "$WORK/cpu.txt")
echo "$whole of $spin holey_spin samples whole, $partial of $all partial"
check "the spinners were sampled ($spin)" [ "$spin" -ge 100 ]
check "every holey_spin stack reaches clone3 through holey_frame ($whole of $spin)" [ "$whole" = "$spin" ] ||
	grep -v "clone3;start_thread;holey_main" "$WORK/cpu.txt" | sort -rn | head -5 >&2
check "at most 1% of the samples partial ($partial of $all)" [ $((100 * partial)) -le "$all" ]
if [ "$SAMPLER" = perf ]; then
	check "--stats counts the stacks completed above an untouched page" \
		grep -qE '[1-9][0-9]* samples whose stack copy ended at an untouched page' "$WORK/cpu.stats" ||
		cat "$WORK/cpu.stats" >&2
fi
check "target left running" not_stopped "$TPID"
finish
