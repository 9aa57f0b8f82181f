#!/usr/bin/env bash
# Wall samples of a thread that works in short bursts (the burst target:
# ~50 us of CPU in burst_work, 200 us asleep, beside two busy threads so
# that, woken, it waits for a CPU) are labelled by what the thread was
# doing when its tick looked: running, runnable (waiting for a CPU:
# schedstat's run-queue time) or sleeping. Before (issue 26, item 7) a
# stop asked of a running thread that had gone to sleep by the time it
# stopped was labelled running with the sleep's stack: 22-29% of the
# thread's wall time was "running" in clock_nanosleep, and waiting for a
# CPU was not told from running. Checked: under 10% running in the sleep
# (0.4-5.4% in 42 runs since a stop found in a timer sleep's entry after
# the thread ran on is taken for a slide on any host; 0.3-10.4% before,
# CI's host read 10.4%); runnable time present, and at most 2.5 times
# schedstat's run-queue time over the window: 60 runs on 2026-11-27,
# quiet and beside two busy loops, read 0.35-1.65 times (mean about 0.9,
# sd about 0.3: the split of a thread's ticks between running, runnable
# and asleep moves between two captures of one target), so 1.3 failed 1
# run in 8.
# Not reached on the PVM guests (2026-11-26): the
# issue's bars (burst_work within 10% of its CPU, runnable within 15%):
# burst_work read 0.72-0.88 of its CPU and runnable 0.65-0.84 of the
# run-queue time in 3 runs beside a make check (a stop that waits for a
# CPU and is copied late is taken for a running one), doc/measurements.md.
. "$(dirname "$0")/lib.sh"

start_target burst 50 200 2
tid=$(awk '/^burst / { print $2; exit }' "$WORK/burst.out")
check "the burst thread is there" [ -n "$tid" ]
m0=$(date +%s%N)
q0=$(awk '{ print $2 }' "/proc/$TPID/task/$tid/schedstat")
"$ATTACH" -p "$TPID" -t wall -F 1000 -d 4s -o "$WORK/wall.pb.gz" -q || fail "cprof-attach failed"
m1=$(date +%s%N)
q1=$(awk '{ print $2 }' "/proc/$TPID/task/$tid/schedstat")
"$PBDUMP" "$WORK/wall.pb.gz" | awk -v t="$tid" '/^sample / && $0 ~ ("tid=" t "( |;|$)") {
	split($2, v, ","); st = $0; sub(/.*state=/, "", st); sub(/[;].*/, "", st)
	s = $0; sub(/.* stack /, "", s); all += v[2]
	if (st == "runnable") q += v[2]
	if (st == "running" && s ~ /clock_nanosleep(;entry_SYSCALL_64[a-z_]*(;[^;]+)*)?$/) rs += v[2]
} END { printf "%.0f %.0f %.0f\n", all, q, rs }' >"$WORK/sums"
read -r all runnable runsleep <"$WORK/sums"
# The run-queue time over the profile's 4 s, from schedstat over our window.
rq=$(awk -v a="$q0" -v b="$q1" -v m0="$m0" -v m1="$m1" 'BEGIN { printf "%.0f", (b - a) * 4e9 / (m1 - m0) }')
echo "burst thread: $all ns sampled; runnable $runnable ns, schedstat's run-queue time $rq ns; running in clock_nanosleep $runsleep ns"
check "running in clock_nanosleep under 10% of the thread's samples" \
	awk -v r="$runsleep" -v a="$all" 'BEGIN { exit !(a > 0 && r < 0.10 * a) }'
check "runnable time is sampled" awk -v r="$runnable" 'BEGIN { exit !(r > 0) }'
check "runnable at most 2.5 times schedstat's run-queue time" \
	awk -v r="$runnable" -v q="$rq" 'BEGIN { exit !(r <= 2.5 * q) }'
check "target left running" not_stopped "$TPID"
finish
