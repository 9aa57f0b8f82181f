#!/usr/bin/env bash
# sampler: both
# A busy server's shape: far more runnable threads than CPUs (12 computing
# in four functions, 8 passing tokens over pipes, blocking in read). Each
# function's share of the CPU profile (-cum) is within 5 points of its
# threads' share of the process's CPU from /proc over the same window, the
# profile's total within 10% of /proc's, and at least 90% of the ticks
# asked for are taken: the clock does not wait for threads that wait for a
# CPU.
. "$(dirname "$0")/lib.sh"

start_target crowd 12 4
sleep 0.5
declare -A c0 c1
cpu_by_comm "$TPID" >"$WORK/c0"
w0=$(date +%s%N)
"$ATTACH" -p "$TPID" -d 5s -o "$WORK/cpu.pb.gz" -q --stats 2>"$WORK/stats"
rc=$?
w1=$(date +%s%N)
cpu_by_comm "$TPID" >"$WORK/c1"
while read -r k v; do c0[$k]=$v; done <"$WORK/c0"
while read -r k v; do c1[$k]=$v; done <"$WORK/c1"
a0=${c0[all]} a1=${c1[all]}
check "cprof-attach exits 0 (got $rc)" [ "$rc" = 0 ] || cat "$WORK/stats"
cat "$WORK/stats"

# marker_share THREAD PATTERN: the share of the profile under the marker
# frame matching PATTERN in THREAD's samples.
marker_share() {
	go tool pprof -top -tagfocus="thread=$1" -symbolize=none "$WORK/cpu.pb.gz" 2>/dev/null |
		awk -v m="$2" '$0 ~ m { sub("%", "", $2); print $2; found = 1; exit }
			END { if (!found) print 0 }'
}

for g in calc_a calc_b calc_c calc_d pipe; do
	fn=$g
	[ "$g" = pipe ] && fn=pipe_main
	truth=$(awk -v a="$((c1[$g] - c0[$g]))" -v t="$((a1 - a0))" 'BEGIN { printf "%.2f", 100 * a / t }')
	got=$(pprof_cum "$WORK/cpu.pb.gz" "$fn")
	echo "$fn: profile $got% vs /proc $truth% (threads named $g)"
	if [ "$g" = pipe ] && ! grep -q "stats: sampler perf" "$WORK/stats"; then
		# Stopping a thread takes longer than a pipe thread's burst of
		# work: on a machine loaded beyond this target's own 20 threads
		# (CI's), a pipe thread may wait for a CPU at every stop and never
		# be found running. Its CPU is then neither dropped nor charged
		# where it sleeps, but kept under its own thread's marker: that is
		# what is checked then. The perf sampler has no such limit.
		# The kernel switching them in and out around their waits is their
		# CPU too, kept apart under its own frame (common/waitcost.h): a
		# pipe thread waits at every token, the calc threads rarely.
		miss=$(marker_share pipe 'never found running')
		waits=$(marker_share pipe 'switching the thread in and out')
		echo "$fn: the pipe threads' [not captured: never found running] $miss%, their waits $waits%"
		check "$fn's share, with its threads' CPU never found running and their waits, within 5 points" \
			near "$(awk -v a="$got" -v b="$miss" -v w="$waits" 'BEGIN { print a + b + w }')" "$truth" 5
		check "$fn's share not above its threads' CPU by 5 points" \
			awk -v a="$got" -v b="$truth" 'BEGIN { exit !(a <= b + 5) }'
		continue
	fi
	check "$fn's share within 5 points of its threads' CPU" near "$got" "$truth" 5
done

check_cpu_total "$WORK/cpu.pb.gz" "$WORK/stats" "$a0" "$a1" "$w0" "$w1" 10

if grep -q "stats: sampler perf" "$WORK/stats"; then
	# The kernel takes perf's samples: none waits for a CPU, and the rings
	# (every process's samples on these CPUs) must be read before they fill.
	read -r mine others lost < <(sed -n 's/.* \([0-9]*\) samples of the target, \([0-9]*\) of other processes passed over, \([0-9]*\) lost.*/\1 \2 \3/p' "$WORK/stats")
	check "samples lost to full rings (${lost:-?} of $((${mine:-0} + ${others:-0} + ${lost:-0}))) at most 10%" \
		awk -v m="${mine:-0}" -v o="${others:-0}" -v l="${lost:-1}" 'BEGIN { exit !(m > 0 && l * 10 <= m + o + l) }'
else
	read -r taken asked < <(sed -n 's/.*ticks: \([0-9]*\) of \([0-9]*\) taken.*/\1 \2/p' "$WORK/stats")
	check "ticks taken ($taken of ${asked:-?}) at least 90% of those asked for" \
		awk -v t="${taken:-0}" -v a="${asked:-0}" 'BEGIN { exit !(a > 0 && t >= 0.9 * a) }'
fi
check "target left running" not_stopped "$TPID"
finish
