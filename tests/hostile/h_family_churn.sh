#!/usr/bin/env bash
# A hostile process family under --children (perf, CPU-wide events): the
# attacker forks more descendants than cprof-attach takes (300 against
# CHILDREN_MAX 256) and some of them exec again and again (a new program,
# so a new member of the family, every few ms), at the largest
# --stack-size. Bounds: at most 257 processes profiled, the capture ends
# within its time, peak RSS under 200 MiB, exit 0 with a profile, SIGTERM
# obeyed within 2 s, the family left running.
source "$(dirname "$0")/lib.sh"

RSS_CAP=200

# The re-exec loop: counts a little, then becomes itself again.
cat >"$AWORK/reexec" <<'SH'
#!/bin/sh
i=0
while [ $i -lt 2000 ]; do i=$((i + 1)); done
exec "$0"
SH
chmod 755 "$AWORK/reexec"
cat >"$AWORK/family" <<SH
#!/bin/sh
for i in \$(seq 1 8); do "$AWORK/reexec" & done
for i in \$(seq 1 292); do sleep 1000 & done
echo "ready \$\$"
wait
SH
chmod 755 "$AWORK/family"

echo "-- 300 descendants, 8 of them exec'ing in a loop"
start_hostile family as_attacker "$AWORK/family"
for i in $(seq 1 100); do
	[ "$(grep -l "^PPid:[[:space:]]*$TPID\$" /proc/[0-9]*/status 2>/dev/null | wc -l)" -ge 300 ] && break
	sleep 0.1
done
bounded churn 20 "$RSS_CAP" -p "$TPID" --children --sampler perf --stack-size 1M -d 3s \
	-o "$WORK/churn.pb.gz"
check "churn exits 0 (exit $RC: $(tail -1 "$WORK/churn.stderr" | head -c 300))" test "$RC" = 0
check "churn writes a profile" test -s "$WORK/churn.pb.gz"
n=$(grep -o 'in [0-9]* processes' "$WORK/churn.stderr" | grep -o '[0-9]*')
check "at most 257 processes profiled (${n:-none})" test -n "$n" -a "${n:-0}" -le 257
alive churn

echo "-- SIGTERM during the capture"
"$ATTACH" -p "$TPID" --children --sampler perf -d 60s -o "$WORK/term.pb.gz" -q 2>"$WORK/term.err" &
ap=$!
sleep 2
t0=$(date +%s%N)
kill -TERM "$ap"
wait "$ap"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "SIGTERM obeyed within 2 s (${ms} ms, exit $rc)" test "$ms" -lt 2000
check "... and the profile written" test -s "$WORK/term.pb.gz"
alive term
pkill -KILL -P "$TPID" 2>/dev/null
kill -KILL "$TPID" 2>/dev/null
finish
