#!/usr/bin/env bash
# A target whose own CFI never ends (tests/targets/hostile_unwind_cfiloop.c):
# a CFA expression that jumps onto itself (DW_OP_skip -3, no memory read
# but its opcodes), the same for the return address, a loop that reads the
# stack each time round, and a 400-frame recursion whose every frame's CFA
# expression counts down long enough to spend the per-stack budget. Run by
# the attacker; cprof-attach as root profiles it with every sampler. Each
# capture ends within its duration plus a few seconds, its peak RSS stays
# small, the hostile threads' stacks end in "[partial: unwind budget
# spent]" right above their own function's frames, the sleeping main
# thread stays complete, SIGTERM ends a long capture within 2 s, and the
# target runs on. The wall-time bounds assume a machine that gives
# cprof-attach's (niced) consumer some CPU; its own CPU time is checked
# too, which load does not stretch.
. "$(dirname "$0")/lib.sh"

T=$TARGETS/hostile_unwind_cfiloop
RSS=100 # MiB

# stacks_of FILE: "THREAD STACK" per sample, from a profile.
stacks_of() {
	"$PBDUMP" "$1" | awk '/^sample / { l = $0; sub(/.*thread=/, "", l); sub(/[; ].*/, "", l)
		s = $0; sub(/.* stack /, "", s); print l, s }' | sort | uniq -c
}

# own_cpu NAME MAX_S: cprof-attach's own CPU time (from --stats), which
# the machine's load does not stretch, stayed under MAX_S seconds.
own_cpu() {
	local c
	c=$(sed -n 's/.*own CPU \([0-9.]*\)s over.*/\1/p' "$WORK/$1.stderr" | head -1)
	check "$1: own CPU under ${2}s (${c:-none}s)" awk -v c="${c:-}" -v m="$2" 'BEGIN { exit !(c != "" && c < m) }'
}

# budget_spent FILE: every sample of each hostile thread (the kernel's own
# frames aside) ends in the budget's partial frame above that thread's
# function, and each thread has one; main's samples are complete.
budget_spent() {
	stacks_of "$1" >"$1.stacks"
	awk 'function want(t) {
			if (t == "cfaloop") return "hostile_cfa_loop"
			if (t == "raloop") return "hostile_ra_loop"
			if (t == "derefloop") return "hostile_deref_loop"
			if (t == "deep") return "hostile_deep(;hostile_deep)*"
			return ""
		}
		{ t = $2; s = $0; sub(/^ *[0-9]+ [^ ]+ /, "", s) }
		s ~ /^\[kernel:/ { next }
		want(t) != "" {
			if (s !~ ("^\\[partial: unwind budget spent\\];" want(t) "$")) { print "bad: " t " " s; bad++ }
			else seen[t]++
			next
		}
		s ~ /^\[partial/ { print "main partial: " s; bad++ }
		END { n = ("cfaloop" in seen) + ("raloop" in seen) + ("derefloop" in seen) + ("deep" in seen)
			if (n != 4) print "threads with the partial frame: " n " of 4"
			exit !(n == 4 && bad == 0) }' "$1.stacks" | head -5 >&2
	return "${PIPESTATUS[0]}"
}

# Asleep in the hostile functions: the wall and threads captures (ptrace).
# The user unwinder's budget is the point: --no-kernel keeps the hostile
# function the leaf (as root, the kernel's frames would come below it).
start_hostile sleep as_attacker "$T"
bounded threads 5 "$RSS" -p "$TPID" -t threads --no-kernel --format dump -o "$WORK/t.txt" --stats
check "threads: exit 0" test "$RC" = 0
own_cpu threads 1
for f in hostile_cfa_loop hostile_ra_loop hostile_deref_loop hostile_deep; do
	check "threads: $f's stack ends in the budget's partial frame" \
		awk -v f="$f" '/^thread / { fn = ""; nf = 0 } /^ *#0 / { fn = $3; sub(/\+.*/, "", fn) }
			/^ *#[0-9]+ / && fn == f { last = $0 } END { exit !(last ~ /\[partial: unwind budget spent\]/) }' "$WORK/t.txt"
done
alive threads
bounded wall 8 "$RSS" -p "$TPID" -t wall -d 2s --no-kernel -o "$WORK/w.pb.gz" --stats
check "wall: exit 0" test "$RC" = 0
own_cpu wall 1
check "wall: the hostile stacks end in [partial: unwind budget spent]" budget_spent "$WORK/w.pb.gz"
alive wall
sigterm_within wall-sigterm 2 -p "$TPID" -t wall -d 60s -o "$WORK/ws.pb.gz" -q
alive wall-sigterm

# Running in bursts in the hostile functions: the CPU samplers.
start_hostile duty as_attacker "$T" duty
for s in perf ptrace; do
	bounded "cpu-$s" 8 "$RSS" -p "$TPID" -d 2s --sampler "$s" --no-kernel -o "$WORK/c-$s.pb.gz" --stats
	check "cpu-$s: exit 0" test "$RC" = 0
	own_cpu "cpu-$s" 2
	check "cpu-$s: the hostile stacks end in [partial: unwind budget spent]" budget_spent "$WORK/c-$s.pb.gz"
	alive "cpu-$s"
done
sigterm_within cpu-sigterm 2 -p "$TPID" -d 60s --sampler ptrace -o "$WORK/cs.pb.gz" -q
alive cpu-sigterm
finish
