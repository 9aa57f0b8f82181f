#!/usr/bin/env bash
# sampler: both
# CPU used while running is charged where the thread ran, not where it
# sleeps when the tick comes. The evloop target's threads handle a request
# for ~100 us of CPU and wait ~150 us, thousands of times a second, and
# measure their handler's CPU themselves (CLOCK_THREAD_CPUTIME_ID around
# it). In each loop thread's samples, handle_request's share is close to
# that measurement over the same window, and the sleep gets almost nothing:
# one loop at 100 Hz and at 1000 Hz; two loops and a busy thread sharing
# the 2 CPUs. About 5% of such a thread's CPU is the kernel switching it
# out and in around its waits, with interrupts off, where no stop and no
# clock interrupt lands; both samplers keep an estimate of it apart under
# a frame of its own: the thread's waits (slices in schedstat) times one
# wait's CPU as measured on cprof's own threads (common/waitcost.h).
# Without it the handler read 3-7 points high. On a plain VM 3 runs each
# (18 measurements) gave ptrace -2.7..+4.4 (mean +1.7) and perf CPU-wide
# -3.2..+3.7 (mean +0.8). CI's machines are PVM guests since 2026-11-26:
# there a timer sleep costs its thread 17-19 us that no sampler sees (16%
# of a loop's CPU, against 5%), a ptrace stop waits for the thread's next
# kernel entry, and the estimate of the first carries the error: 5 runs
# (2026-11-26, doc/measurements.md) gave perf CPU-wide -12.1..+3.5 (40
# measurements, mean -2.9, one past -9), ptrace -6.1..+2.6 (2 runs, 12,
# after the slid stops and the voluntary share); with a stop's slices
# compared with the look before its interrupt, -2.5..+5.4 (one run, 6,
# and 10 of two-loops-busy-1000hz: +0.4..+4.5). The tolerance is 13,
# the worst seen plus one; at 100 Hz the samples alone vary by +-4. The
# sleep's bar, 20%, allows for 160 samples at 100 Hz (one run in ten saw
# 11%: the syscall's own kernel side is a true sample there).
# With kernel call chains (root: perf's default) as without: no tick
# lands in the switch either way, and the estimate is the same
# (doc/measurements.md, 2026-11-27, eighth session).
. "$(dirname "$0")/lib.sh"

# loops_now: ask the target for its counters; print "TID HANDLER_NS CPU_NS" lines.
loops_now() {
	local out=$WORK/evloop.out
	ask_target evloop
	awk '/^loop/ { l[$2] = $3 " " $4 } END { for (t in l) print t, l[t] }' "$out"
}

# draws_tol STATS DUMP TID TRUTH TOL: TOL, or three standard deviations of
# a share TRUTH% estimated from the thread's stacks, if more. A share
# drawn from n independent stacks has a standard deviation of
# sqrt(p(1-p)/n); the thread's n is the capture's stacks (--stats) times
# its part of the profile. A ptrace stop on a PVM guest finds such a loop
# asleep three times in four (its CPU carried on, not a new draw): CI's
# loop-100hz drew 27 stacks in 4 s, where 2 sd are 14 points and it read
# -14.2 (2026-11-26).
draws_tol() {
	local stacks
	stacks=$(sed -n 's/.*stats: \([0-9]*\) stacks, .*/\1/p' "$1" | head -1)
	awk -v t="$3" -v n="$stacks" -v p="$4" -v tol="$5" '
		/^sample / { split($2, v, ","); all += v[2]; if ($0 ~ ("tid=" t "( |;|$)")) mine += v[2] }
		END { k = (all > 0 && n > 0) ? n * mine / all : 0; p /= 100
		      sd = k > 0 ? 100 * sqrt(p * (1 - p) / k) : 0
		      printf "%.1f", (3 * sd > tol ? 3 * sd : tol) }' "$2"
}

# one_case NAME HZ LOOPS BUSY [POLL_FDS TOLERANCE]: with POLL_FDS the loop
# waits in ppoll() on that many idle pipes, whose kernel CPU around the
# sleep is the wait's own (not capped at 20%), and the handler is checked
# within TOLERANCE points.
one_case() {
	local name=$1 hz=$2 loops=$3 busy=$4 npoll=${5:-0} tol=${6:-9} before after rc tid truth got sleep_pct waits
	case_wanted "$name" || return 0
	start_target evloop "$loops" "$busy" 100 150 "$npoll"
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
		waits=$(awk -v t="$tid" '
			/^sample / && $0 ~ ("tid=" t "( |;|$)") { split($2, v, ","); all += v[2]
				if ($0 ~ /\[kernel: switching the thread in and out\]/) h += v[2] }
			END { if (all) printf "%.1f", 100 * h / all; else print -1 }' "$WORK/$name.txt")
		echo "$name: thread $tid the kernel's side of its waits $waits%"
		# ptrace always keeps it apart; CPU-wide events only what the clock shows beyond the samples.
		[ "$SAMPLER" = ptrace ] && check "$name: thread $tid's waits have a frame of their own ($waits%)" below 0.5 "$waits"
		# The waits' frame is an estimate of CPU outside the handler: not
		# much more than the thread measured there. On CI's PVM machines it
		# went past that by up to 5.2 points (ptrace under ASan, two loops
		# beside a busy thread, 2026-11-26), hence 8; the fixed bar it
		# replaces (20%) let it take the handler's share whole.
		check "$name: thread $tid's waits ($waits%) within what its handler left (100 - $truth%) + 8" \
			below "$waits" "$(awk -v t="$truth" 'BEGIN { print 108 - t }')"
		[ "$npoll" = 0 ] && check "$name: thread $tid's sleep gets under 20% of its CPU" below "$sleep_pct" 20
		if [ "$SAMPLER" = ptrace ] && [ "$npoll" != 0 ]; then
			echo "$name: handler share reported, not checked: ptrace cannot place a call's kernel CPU (doc/limits.md)"
			continue
		fi
		ttol=$(draws_tol "$WORK/$name.stats" "$WORK/$name.txt" "$tid" "$truth" "$tol")
		check "$name: thread $tid's handler share within $ttol points of its own measurement" \
			near "$got" "$truth" "$ttol" || { cat "$WORK/$name.stats"; go tool pprof -top -symbolize=none "$WORK/$name.pb.gz" 2>/dev/null | sed -n 6,14p; }
	done
	check "$name: target left running" not_stopped "$TPID"
	kill "$TPID"
}

# Under ASan and UBSan the tracer's stops take 3-5 times longer (pause
# p50 131 us against 20-40), and a stop asked of a thread in a 100 us
# burst lands later in it, or in the sleep's entry: one sanitized run read
# -9.8 (loop-100hz, ptrace; the same run's other 13 cases -2.4..+6.9).
# The accuracy of the sanitized build is not what that pass is for.
tol=13
[ "$SANITIZED" = 1 ] && tol=15
one_case loop-100hz 100 1 0 0 "$tol"
one_case loop-1000hz 1000 1 0 0 "$tol"
one_case two-loops-busy 100 2 1 0 "$tol"
one_case two-loops-busy-1000hz 1000 2 1 0 "$tol"
# A wait that costs the kernel CPU before and after its sleep (ppoll of 400
# descriptors: ~half the thread's CPU). perf events sample it where it
# runs: -3.3..+4.3 points in 8 runs at 100 Hz. The ptrace sampler cannot
# see where in a call the kernel spent its CPU (doc/limits.md):
# -11.4..+8.8 in 6 runs, hence 20; at 1000 Hz its stops break the sleep
# often enough that the restarted scans are a cost of their own (14-17
# points low), so that case is perf's alone. On a PVM guest the poll's
# timeout ends each wait, and its timer's 17-19 us, unseen, went to the
# handler: +5..+29 in 5 runs (2026-11-26), and once a stop's slices
# were compared with the look before its interrupt (a thread woken by its
# timer is found asleep, not running the call), -4..+33 in 11 runs: there
# a kick does not stop user code, so the stop lands at the next kernel
# entry, mostly this very ppoll, and how much of the poll's CPU is carried
# to the handler depends on the phase of the loop against the ticks. The
# handler was not checked with ptrace where the stats said kicks wait;
# once the tracer's 1 ms pause was gone (the watchdog took every SIGCHLD)
# the same host read kicks as prompt and the loop +31 against 30. It is
# reported, not checked, with ptrace: the limit is documented, and
# perf's cases below check the shape. There, before each pass drew
# a new period (attach/source/perfsrc.c, PERIOD_JITTER), the loop's timer
# locked to the fixed grid of CPU-wide events on a quiet VM: -12..-3;
# with it -2.2..+1.1 in 9 runs.
if [ "$SAMPLER" = ptrace ]; then
	one_case poll-400-100hz 100 1 0 400 30
	echo "poll-400-1000hz: not run with ptrace (its stops restart the poll: doc/limits.md)"
else
	one_case poll-400-100hz 100 1 0 400 "$tol"
	one_case poll-400-1000hz 1000 1 0 400 "$tol"
fi

# Per-thread events, user mode only: an unprivileged user at
# perf_event_paranoid 2. The kernel drops every sample that lands in
# kernel mode; the CPU the thread's clock shows beyond its samples is its
# kernel time, under one frame of its own, not spread over its user-mode
# samples (spread, the handler got 99% of the thread for 90% measured).
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 9)
if ! case_wanted user-mode-only; then
	:
elif [ "$SAMPLER" != ptrace ] && [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	[ "$paranoid" = 2 ]; then
	chmod 777 "$WORK"
	: >"$WORK/evloop.out"
	chmod 666 "$WORK/evloop.out"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TARGETS/evloop" 1 0 >>"$WORK/evloop.out" 2>&1 &
	TPID=$!
	PIDS="$PIDS $TPID"
	while ! grep -q '^end' "$WORK/evloop.out" 2>/dev/null; do sleep 0.05; done
	sleep 0.3
	before=$(loops_now)
	setpriv --reuid=65534 --regid=65534 --clear-groups "${REAL_ATTACH:-$ATTACH}" -p "$TPID" -d 4s \
		-F 1000 --sampler perf --no-line-cache --stats -o "$WORK/user.pb.gz" 2>"$WORK/user.stats"
	rc=$?
	after=$(loops_now)
	check "user mode only: exit 0 ($rc), per-thread events" \
		sh -c "[ $rc = 0 ] && grep -q 'per-thread events (user mode only)' '$WORK/user.stats'"
	"$PBDUMP" "$WORK/user.pb.gz" >"$WORK/user.txt"
	tid=$(echo "$before" | awk '{ print $1; exit }')
	truth=$(printf '%s\n%s\n' "$before" "$after" | awk -v t="$tid" '
		$1 == t && !seen { h0 = $2; c0 = $3; seen = 1; next }
		$1 == t { h1 = $2; c1 = $3 }
		END { printf "%.1f", 100 * (h1 - h0) / (c1 - c0) }')
	read -r got kern spread < <(awk -v t="$tid" '
		/^sample / && $0 ~ ("tid=" t "( |;|$)") { split($2, v, ","); all += v[2]
			if ($0 ~ /;handle_request(;|$)/) h += v[2]
			if ($0 ~ /\[kernel mode: not sampled/) k += v[2] }
		END { if (all > k) printf "%.1f %.1f %.1f\n", 100 * h / all, 100 * k / all, 100 * h / (all - k)
		      else print "-1 -1 -1" }' "$WORK/user.txt")
	echo "user mode only: handle_request $got%, kernel frame $kern%, $truth% measured by the thread"
	check "user mode only: the thread's kernel time has its own frame ($kern%)" below 1 "$kern"
	# Spread over the user-mode samples, the kernel time would give the
	# handler $spread% (99% for 90% on a plain VM, 98% for 77% on a PVM
	# guest): the handler must sit nearer the truth than that. Runs read
	# -7.5..+5.3 points from the truth (doc/measurements.md), so a fixed
	# "+5" was no bar, only a coin.
	check "user mode only: the handler not credited with kernel time ($got% below the midpoint of $truth% and $spread%)" \
		below "$got" "$(awk -v t="$truth" -v s="$spread" 'BEGIN { print (t + s) / 2 }')"
	check "user mode only: handler within 12 points of the thread's measurement" near "$got" "$truth" 12
	check "user mode only: target left running" not_stopped "$TPID"
	kill "$TPID"
else
	echo "not root, no setpriv, the ptrace pass, or perf_event_paranoid $paranoid != 2: user-mode-only events not tested"
fi
finish
