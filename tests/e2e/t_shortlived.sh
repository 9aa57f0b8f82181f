#!/usr/bin/env bash
# sampler: both
# Threads that live for less than a sampling period count. The shortlived
# target creates and joins ~500 threads a second, each burning ~0.3 ms of
# CPU in short_burn() under short_main(), beside a thread spinning all the
# time, and measures its short threads' CPU itself. The short threads'
# share of the profile is within 5 points of their share of the
# process's CPU over the same window, and the profile's CPU total within
# 10% of /proc's. Before, the ptrace sampler showed 0% for them and 84%
# of the process's CPU in all. With perf's per-thread events (an
# unprivileged user: no CPU-wide events) a thread shorter than a period is
# never sampled: then it is [short-lived threads] that must hold their share.
. "$(dirname "$0")/lib.sh"

# counts_now: ask the target; print "THREADS SHORT_CPU_NS PROCESS_CPU_NS".
counts_now() {
	local out=$WORK/shortlived.out
	ask_target shortlived
	awk '/^short/ { l = $2 " " $3 " " $4 } END { print l }' "$out"
}

# proc_cpu_ms PID: utime + stime from /proc/PID/stat, in ms (ended threads included).
proc_cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) * 1000 / hz }' /proc/"$1"/stat
}

# long_cpu: the steady and main threads' CPU (schedstat), ns: the rest
# of the process's CPU is the short threads', their start and exit included.
long_cpu() {
	local t sum=0 c
	for t in /proc/"$TPID"/task/*; do
		[ "${t##*/}" = "$TPID" ] || [ "$(cat "$t/comm" 2>/dev/null)" = steady ] || continue
		read -r c _ <"$t/schedstat" && sum=$((sum + c))
	done
	echo "$sum"
}

start_target shortlived
sleep 0.5
before=$(counts_now)
l0=$(long_cpu)
p0=$(proc_cpu_ms "$TPID")
w0=$(date +%s%N)
"$ATTACH" -p "$TPID" -d 5s -o "$WORK/short.pb.gz" -q --stats 2>"$WORK/short.stats"
rc=$?
w1=$(date +%s%N)
p1=$(proc_cpu_ms "$TPID")
after=$(counts_now)
l1=$(long_cpu)
check "cprof-attach exits 0 (got $rc)" [ "$rc" = 0 ] || cat "$WORK/short.stats"
read -r n0 s0 c0 <<<"$before"
read -r n1 s1 c1 <<<"$after"
rate=$(awk -v n="$((n1 - n0))" -v w="$((w1 - w0))" 'BEGIN { printf "%.0f", n / (w / 1e9) }')
truth=$(awk -v s="$((s1 - s0))" -v c="$((c1 - c0))" 'BEGIN { printf "%.2f", 100 * s / c }')
whole=$(awk -v l="$((l1 - l0))" -v c="$((c1 - c0))" 'BEGIN { printf "%.2f", 100 * (c - l) / c }')
# The short threads' share: every sample but the steady thread's and the
# main thread's (their short_main, their start and exit in start_thread,
# [short-lived threads]), against the process's CPU less those two
# threads' clocks. short_main alone is not the bar: within a short thread,
# where a stop lands is skewed to its exit by the stop's own latency (a
# thread of 0.3 ms stopped 50-110 us after the look is past short_burn a
# third of the time: short_main read 7.7-8.4% against 13.4-13.6 in two
# CI runs on 2026-11-27, the rest in start_thread; doc/limits.md).
got=$("$PBDUMP" "$WORK/short.pb.gz" | awk -v m="$TPID" '/^sample / { split($2, v, ","); all += v[2]
	if ($0 ~ /thread=steady[; ]/ || $0 ~ ("tid=" m "([; ]|$)")) next; s += v[2] }
	END { if (all) printf "%.2f", 100 * s / all; else print 0 }')
cum=$(pprof_cum "$WORK/short.pb.gz" short_main)
marker=$(pprof_flat "$WORK/short.pb.gz" "[short-lived")
echo "short threads: profile $got% vs the process's CPU less the long threads' $whole% (short_main $cum% vs the threads' own $truth%; $rate threads a second); [short-lived threads] $marker%"
if grep -q "perf events (task scope)" "$WORK/short.stats"; then
	echo "perf with per-thread events: the short threads' CPU is [short-lived threads]"
	got=$marker
fi
check "the short threads' share within 5 points of their CPU" near "$got" "$whole" 5 ||
	{ cat "$WORK/short.stats"; go tool pprof -top -symbolize=none "$WORK/short.pb.gz" 2>/dev/null | sed -n 4,14p; }
check "the target made hundreds of threads a second" [ "$rate" -ge 200 ]

check_cpu_total "$WORK/short.pb.gz" "$WORK/short.stats" "$((p0 * 1000000))" "$((p1 * 1000000))" "$w0" "$w1" 10

# Threads made and sampled in clone3, where glibc's CFI ends before the
# syscall: the parent (making the thread, in the kernel) goes on to its
# caller from the word at sp, a child in its first instant is one frame,
# whole. Before, 1-4 stacks of 300 at 1000 Hz ended
# clone3 -> [partial: no unwind info].
"$ATTACH" -p "$TPID" -d 2s -F 1000 -o "$WORK/clone.pb.gz" -q
"$PBDUMP" "$WORK/clone.pb.gz" | grep '^sample' >"$WORK/clone.txt"
bad=$(grep -c 'partial[^;]*\];clone3$' "$WORK/clone.txt")
parent=$(grep -c ';pthread_create;.*;clone3$' "$WORK/clone.txt")
child=$(grep -c ' stack clone3$' "$WORK/clone.txt")
echo "at 1000 Hz: $(wc -l <"$WORK/clone.txt") samples; in clone3: $parent parents' (whole to main), $child children's first instants, $bad partial"
check "no stack ends partial in clone3 ($bad)" [ "$bad" = 0 ]
# A thread sampled past its exit has no id left (perf says tid -1, a few
# samples a second at this rate): it is a marker of no thread, never tid=-1.
gone=$(grep -cE 'tid=(-1|4294967295)([;]| |$)' "$WORK/clone.txt")
echo "samples past a thread's exit: $(grep -c 'thread exiting' "$WORK/clone.txt")"
check "no sample carries tid -1 ($gone)" [ "$gone" = 0 ]
check "target left running" not_stopped "$TPID"
finish
