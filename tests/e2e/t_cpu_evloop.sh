#!/usr/bin/env bash
# sampler: both
# CPU used while running is charged where the thread ran, not where it
# sleeps when the tick comes. The evloop target's threads handle a request
# for ~100 us of CPU and wait ~150 us, thousands of times a second, and
# measure their handler's CPU themselves (CLOCK_THREAD_CPUTIME_ID around
# it). In each loop thread's samples, handle_request's share is close to
# that measurement over the same window, and the sleep gets almost nothing:
# one loop at 100 Hz and at 1000 Hz; two loops and a busy thread sharing
# the 2 CPUs. The tolerance is 9 points, not 5: about 5% of such a thread's
# CPU is the kernel switching it in and out around each sleep, with
# interrupts off, where no stop can land (perf shows it as
# finish_task_switch under clock_nanosleep); the thread's own measurement
# counts it outside the handler, the profile carries it to where the
# thread runs next. Before samples found asleep carried their CPU on, the
# handler got 7-70% and the sleep 25-90%; the sleep's bar, 20%, allows for
# 160 samples at 100 Hz (one run in ten saw 11%: the syscall's own kernel
# side is a true sample there).
. "$(dirname "$0")/lib.sh"

# loops_now: ask the target for its counters; print "TID HANDLER_NS CPU_NS" lines.
loops_now() {
	local out=$WORK/evloop.out
	ask_target evloop
	awk '/^loop/ { l[$2] = $3 " " $4 } END { for (t in l) print t, l[t] }' "$out"
}

# one_case NAME HZ LOOPS BUSY
one_case() {
	local name=$1 hz=$2 loops=$3 busy=$4 before after rc tid truth got sleep_pct
	start_target evloop "$loops" "$busy"
	sleep 0.3
	before=$(loops_now)
	"$ATTACH" -p "$TPID" -d 4s -F "$hz" -o "$WORK/$name.pb.gz" -q --stats 2>"$WORK/$name.stats"
	rc=$?
	after=$(loops_now)
	check "$name: cprof-attach exits 0 (got $rc)" [ "$rc" = 0 ] || cat "$WORK/$name.stats"
	"$PBDUMP" "$WORK/$name.pb.gz" >"$WORK/$name.txt"
	for tid in $(echo "$before" | awk '{ print $1 }'); do
		truth=$(printf '%s\n%s\n' "$before" "$after" | awk -v t="$tid" '
			$1 == t && !seen { h0 = $2; c0 = $3; seen = 1; next }
			$1 == t { h1 = $2; c1 = $3 }
			END { printf "%.1f", 100 * (h1 - h0) / (c1 - c0) }')
		got=$(awk -v t="$tid" '
			/^sample / && $0 ~ ("tid=" t "( |;|$)") { split($2, v, ","); all += v[2]
				if ($0 ~ /;handle_request(;|$)/) h += v[2] }
			END { if (all) printf "%.1f", 100 * h / all; else print -1 }' "$WORK/$name.txt")
		echo "$name: thread $tid handle_request $got% of its CPU in the profile, $truth% measured by the thread"
		sleep_pct=$(awk -v t="$tid" '
			/^sample / && $0 ~ ("tid=" t "( |;|$)") { split($2, v, ","); all += v[2]
				if ($0 ~ /;wait_for_event(;|$)/) h += v[2] }
			END { if (all) printf "%.1f", 100 * h / all; else print -1 }' "$WORK/$name.txt")
		echo "$name: thread $tid wait_for_event $sleep_pct%"
		check "$name: thread $tid's sleep gets under 20% of its CPU" below "$sleep_pct" 20
		check "$name: thread $tid's handler share within 9 points of its own measurement" \
			near "$got" "$truth" 9 || { cat "$WORK/$name.stats"; go tool pprof -top -symbolize=none "$WORK/$name.pb.gz" 2>/dev/null | sed -n 6,14p; }
	done
	check "$name: target left running" not_stopped "$TPID"
	kill "$TPID"
}

one_case loop-100hz 100 1 0
one_case loop-1000hz 1000 1 0
one_case two-loops-busy 100 2 1
one_case two-loops-busy-1000hz 1000 2 1
finish
