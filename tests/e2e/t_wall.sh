#!/usr/bin/env bash
# A wall-clock profile samples every thread, running or not: with one
# always-spinning thread, one spinning a third of the time and an idle main
# thread, each thread gets a third of the wall time (within 5 percentage
# points), and the sleeping part is attributed to the function where it
# sleeps.
. "$(dirname "$0")/lib.sh"

start_target duty
sleep 0.3
read -r c0 q0 < <(task_sched "$TPID" duty)
t0=$(date +%s%N)
"$ATTACH" -p "$TPID" -t wall -d 5s -o "$WORK/w.pb.gz" -q || fail "wall capture failed"
t1=$(date +%s%N)
read -r c1 q1 < <(task_sched "$TPID" duty)
# task_sched sums both threads named "duty" (main and the duty worker); the
# main thread uses no CPU, so the sums are the worker's.

"$PBDUMP" "$WORK/w.pb.gz" >"$WORK/w.txt"
check "sample types samples/count and wall/nanoseconds" grep -q '^sample_type wall nanoseconds' "$WORK/w.txt"
check "period type wall/nanoseconds" grep -q '^period_type wall nanoseconds' "$WORK/w.txt"

# Share of wall time per tid.
awk '/^sample / { split($2, v, ","); l = $4; sub(/.*tid=/, "", l); sub(/;.*/, "", l); w[l] += v[2]; t += v[2] }
	END { for (k in w) printf "%s %.2f\n", k, 100 * w[k] / t }' "$WORK/w.txt" >"$WORK/shares.txt"
cat "$WORK/shares.txt"
check "three threads sampled" [ "$(wc -l <"$WORK/shares.txt")" = 3 ]
while read -r tid share; do
	check "thread $tid has a third of the wall time ($share%)" near "$share" 33.33 5
done <"$WORK/shares.txt"

got_sleep=$(pprof_cum "$WORK/w.pb.gz" duty_sleep)
got_spin=$(pprof_cum "$WORK/w.pb.gz" duty_spin)
got_join=$(pprof_cum "$WORK/w.pb.gz" main)
got_spinner=$(pprof_cum "$WORK/w.pb.gz" spin_forever)
# The duty worker is awake (running or waiting for a CPU) for cpu + runqueue time.
want_sleep=$(awk -v c="$((c1 - c0))" -v q="$((q1 - q0))" -v w="$((t1 - t0))" \
	'BEGIN { s = 1 - (c + q) / w; if (s < 0) s = 0; printf "%.2f", 100 / 3 * s }')
echo "duty_sleep $got_sleep% (expected ~$want_sleep%), duty_spin $got_spin%, main $got_join%, spin_forever $got_spinner%"
check "the sleeping part is in duty_sleep ($got_sleep% vs $want_sleep%)" near "$got_sleep" "$want_sleep" 5
check "duty_spin + duty_sleep is the duty thread's third" near "$(awk -v a="$got_sleep" -v b="$got_spin" 'BEGIN { print a + b }')" 33.33 5
check "the idle main thread's third is in main (pthread_join)" near "$got_join" 33.33 5
check "sleeping samples labelled with state and syscall" \
	grep -qE '^sample [0-9]+,[0-9]+ labels state=sleeping;syscall=clock_nanosleep;thread=duty;tid=' "$WORK/w.txt"
check "target never left stopped" not_stopped "$TPID"

# More threads than descriptors: the per-thread /proc files are a cache,
# dropped and opened again when the process runs out, and the soft limit
# is raised to the hard one. Under ulimit -n 256 a wall capture of 1000
# threads once had none of them, and said nothing (exit 0).
start_target many -n 1000
nmany=$(ls /proc/"$TPID"/task | wc -l)
for lim in -Sn -n; do
	(ulimit $lim 256 && "$ATTACH" -p "$TPID" -t wall -d 1s -o "$WORK/many.pb.gz" -q)
	rc=$?
	got=$("$PBDUMP" "$WORK/many.pb.gz" 2>/dev/null | grep -o 'tid=[0-9]*' | sort -u | wc -l)
	check "ulimit $lim 256, $nmany threads: exit 0 ($rc), every thread in the wall profile ($got)" \
		[ "$rc" = 0 -a "$got" = "$nmany" ]
done
check "1000 threads: target never left stopped" not_stopped "$TPID"
finish
