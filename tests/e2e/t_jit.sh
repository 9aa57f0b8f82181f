#!/usr/bin/env bash
# Code generated at run time (issue 16): tests/targets/jit writes two
# functions into an anonymous executable mapping and names them in
# /tmp/perf-PID.map; its hot JIT function is named in the profile (about
# 80% of the thread), the cold one too, and the dump shows the name
# where it used to print "??". Neither has CFI: the stacks go on through
# the frameless leaf's return address (jit_hot) and the frame record
# (jit_cold) to the thread's start.
. "$(dirname "$0")/lib.sh"

start_target jit
map=/tmp/perf-$TPID.map
check "the target wrote its perf map" [ -s "$map" ]
"$ATTACH" -p "$TPID" -d 2s -o "$WORK/jit.pb.gz" -q || fail "capture failed"
hot=$(pprof_flat "$WORK/jit.pb.gz" jit_hot)
cold=$(pprof_flat "$WORK/jit.pb.gz" jit_cold)
echo "jit_hot $hot%, jit_cold $cold%"
check "the hot JIT function is named, >= 60% ($hot)" awk -v v="$hot" 'BEGIN { exit !(v >= 60) }'
check "the cold JIT function is named ($cold)" awk -v v="$cold" 'BEGIN { exit !(v > 3) }'
"$ATTACH" -p "$TPID" -t threads --format dump -o "$WORK/dump.txt" -q
check "dump: the JIT frame is named (jit_hot or jit_cold), never ??" \
	sh -c "grep -qE ' jit_(hot|cold)\+0x[0-9a-f]+$' '$WORK/dump.txt' && ! grep -q '??' '$WORK/dump.txt'" ||
	cat "$WORK/dump.txt"
"$PBDUMP" "$WORK/jit.pb.gz" >"$WORK/jit.txt"
for f in jit_hot jit_cold; do
	n=$(grep -c ";jitter;$f\$" "$WORK/jit.txt")
	p=$(grep -c "partial.*;$f\$" "$WORK/jit.txt")
	check "$f's stacks reach the thread's start through jitter ($n complete, $p partial)" \
		[ "$n" -ge 1 ] && [ "$p" = 0 ]
done
check "... from clone3" grep -q 'stack clone3;start_thread;jitter;jit_hot$' "$WORK/jit.txt" ||
	grep jit_ "$WORK/jit.txt" | head -5
kill -TERM "$TPID"
for i in $(seq 1 50); do [ -e "$map" ] || break; sleep 0.05; done
rm -f "$map"
finish
