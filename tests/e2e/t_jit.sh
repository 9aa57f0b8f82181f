#!/usr/bin/env bash
# Code generated at run time (issue 16): tests/targets/jit writes two
# functions into an anonymous executable mapping and names them in
# /tmp/perf-PID.map; its hot JIT function is named in the profile (about
# 80% of the thread), the cold one too, and the dump shows the name
# where it used to print "??". Stacks through JIT code without unwind
# information end in a "[partial: ...]" frame below the named leaf.
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
check "below a JIT frame without unwind info: a [partial] root" \
	grep -qE '\[partial: [a-z ]+\]' "$WORK/dump.txt"
kill -TERM "$TPID"
for i in $(seq 1 50); do [ -e "$map" ] || break; sleep 0.05; done
rm -f "$map"
finish
