#!/usr/bin/env bash
# sampler: both
# A CPU profile apportions CPU as the threads really used it: each worker
# function's share (go tool pprof -top -cum) is within 3 percentage points
# of its thread's share of the process's CPU over the window (from
# /proc/PID/task/*/schedstat), and the sleeping function gets under 2%.
. "$(dirname "$0")/lib.sh"

start_target duty
sleep 0.3
cpu_by_comm "$TPID" >"$WORK/c0"
w0=$(date +%s%N)
"$ATTACH" -p "$TPID" -d 5s -o "$WORK/cpu.pb.gz" -q --stats 2>"$WORK/stats"
rc=$?
w1=$(date +%s%N)
cpu_by_comm "$TPID" >"$WORK/c1"
# One read of every thread each side: the same window for each (under load,
# a read per thread name let the windows drift apart).
comm_cpu() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
s0=$(comm_cpu spinner "$WORK/c0") d0=$(comm_cpu duty "$WORK/c0") a0=$(comm_cpu all "$WORK/c0")
s1=$(comm_cpu spinner "$WORK/c1") d1=$(comm_cpu duty "$WORK/c1") a1=$(comm_cpu all "$WORK/c1")
check "cprof-attach exits 0 (got $rc)" [ "$rc" = 0 ]

truth_s=$(awk -v a="$((s1 - s0))" -v t="$((a1 - a0))" 'BEGIN { printf "%.2f", 100 * a / t }')
truth_d=$(awk -v a="$((d1 - d0))" -v t="$((a1 - a0))" 'BEGIN { printf "%.2f", 100 * a / t }')
got_s=$(pprof_cum "$WORK/cpu.pb.gz" spin_forever)
got_d=$(pprof_cum "$WORK/cpu.pb.gz" duty_spin)
got_sleep=$(pprof_cum "$WORK/cpu.pb.gz" duty_sleep)
echo "spinner: profile $got_s% vs /proc $truth_s%; duty: profile $got_d% vs /proc $truth_d%; duty_sleep $got_sleep%"
check "spin_forever share within 3pp of the spinner thread's CPU" near "$got_s" "$truth_s" 3
check "duty_spin share within 3pp of the duty thread's CPU" near "$got_d" "$truth_d" 3
check "duty_sleep under 2%" below "$got_sleep" 2

# The CPU total in the profile is the CPU the process used, not samples x
# period.
check_cpu_total "$WORK/cpu.pb.gz" "$WORK/stats" "$a0" "$a1" "$w0" "$w1" 5

# Labels: thread name and tid on every sample.
"$PBDUMP" "$WORK/cpu.pb.gz" >"$WORK/dump.txt"
check "every sample labelled with thread and tid" \
	awk '/^sample / { n++; if ($0 !~ /thread=/ || $0 !~ /tid=[0-9]+/) bad++ } END { exit !(n > 0 && bad == 0) }' "$WORK/dump.txt"
check "sample types samples/count and cpu/nanoseconds" \
	grep -q "^sample_type cpu nanoseconds" "$WORK/dump.txt"
check "period 1e9/HZ" grep -q "^period 10000000$" "$WORK/dump.txt"
check "duration set" awk '/^duration_nanos/ { exit !($2 > 4e9) }' "$WORK/dump.txt"
check "target left running" not_stopped "$TPID"
finish
