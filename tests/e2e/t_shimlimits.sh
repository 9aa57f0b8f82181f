#!/usr/bin/env bash
# The shim in hostile settings: rejected settings are reported by
# cprof-attach in one line each and by nothing else (the program's stderr
# stays empty unless CPROF_DEBUG is set), suffixed ones are accepted; a
# program whose own malloc comes ahead of the shim runs untouched and
# cprof-attach says why it cannot profile it; the heap test's live sets
# under an address-space limit (ulimit -v) 1 GiB above the program's own
# peak; under vm.overcommit_memory=2 only when CPROF_TEST_OVERCOMMIT=1
# allows changing that machine-wide setting.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libcprof.so

value() {
	awk -v i="$1" -v f="$2" '/^sample / { split($2, v, ","); s = $0; sub(/.* stack /, "", s); n = split(s, fr, ";"); if (fr[n] == f) t += v[i] } END { print t + 0 }' "$3"
}

# start_env VAR=VALUE... -- NAME [ARGS]: start_target with the variables
# set for the target alone (not for the helpers that wait for it).
start_env() {
	TARGET_ENV=()
	while [ "$1" != -- ]; do TARGET_ENV+=("$1"); shift; done
	shift
	start_target "$@"
	TARGET_ENV=()
}

# live_sets NAME: the heap test's live sets in $WORK/NAME.txt, within 15%.
live_sets() {
	local spec f want got
	for spec in keep_small:81920000 keep_big:8388608 keep_calloc:64000000 keep_realloc:4194304 keep_aligned:65536000; do
		f=${spec%:*}
		want=${spec#*:}
		got=$(value 4 "$f" "$WORK/$1.txt")
		check "$1: $f in use: $got bytes, truth $want (within 15%)" near "$got" "$want" "$((want * 15 / 100))"
	done
}

# Settings: each rejected value named with the target's pid and the value in force.
for spec in "abc:is not a number; sampling at 524288" "-5:is negative; sampling at 524288" \
	"99999999999999999999:is too large; sampling at 524288" "64kx:is not a number; sampling at 524288"; do
	v=${spec%%:*}
	want=${spec#*:}
	start_env LD_PRELOAD="$SHIM" CPROF_SAMPLE_RATE="$v" -- heapload
	"$ATTACH" -p "$TPID" -t heap -o "$WORK/bad.pb.gz" 2>"$WORK/bad.err"
	check "CPROF_SAMPLE_RATE=$v: cprof-attach says \"CPROF_SAMPLE_RATE=$v in $TPID $want\"" \
		grep -qF "CPROF_SAMPLE_RATE=$v in $TPID $want" "$WORK/bad.err" || cat "$WORK/bad.err" >&2
	check "CPROF_SAMPLE_RATE=$v: the default rate is in force" \
		sh -c "'$PBDUMP' '$WORK/bad.pb.gz' | grep -q '^period 524288\$'"
	check "CPROF_SAMPLE_RATE=$v: the shim wrote nothing to the program's output" \
		[ -z "$(grep -v '^ready\|^tick' "$WORK/heapload.out")" ]
	kill -9 "$TPID" 2>/dev/null
	wait "$TPID" 2>/dev/null
done
start_env LD_PRELOAD="$SHIM" CPROF_SAMPLE_RATE=xyz CPROF_MAX_BUCKETS=-1 CPROF_DEBUG=1 -- heapload
check "CPROF_DEBUG=1: the shim names each rejected setting on stderr" sh -c "
	grep -q '^libcprof.so: CPROF_SAMPLE_RATE=xyz in $TPID is not a number; using 524288\$' '$WORK/heapload.out' &&
	grep -q '^libcprof.so: CPROF_MAX_BUCKETS=-1 in $TPID is negative; using 32768\$' '$WORK/heapload.out'"
for v in 64k 64K 64KB; do
	start_env LD_PRELOAD="$SHIM" CPROF_SAMPLE_RATE="$v" -- heapload
	"$ATTACH" -p "$TPID" -t heap -o "$WORK/k.pb.gz" 2>"$WORK/k.err"
	check "CPROF_SAMPLE_RATE=$v is 65536, without a word" sh -c "
		'$PBDUMP' '$WORK/k.pb.gz' | grep -q '^period 65536\$' && ! grep -q warning '$WORK/k.err'"
	kill -9 "$TPID" 2>/dev/null
	wait "$TPID" 2>/dev/null
done

# Forks of forks before the shim is active (a shell's subshells): every
# child must find the shim's locks free.
LD_PRELOAD=$SHIM timeout 20 bash -c 'for i in 1 2 3; do x=$( ( y=$( (echo a) ); echo "$y" ) ); done; [ "$x" = a ]'
check "nested forks of an inactive shim finish (a shell's subshells)" [ $? = 0 ]
LD_PRELOAD=$SHIM CPROF_SAMPLE_RATE=1 timeout 20 bash -c 'for i in 1 2 3; do x=$( ( y=$( (echo a) ); echo "$y" ) ); done; [ "$x" = a ]'
check "nested forks of an active shim finish" [ $? = 0 ]

# A program that brings its own malloc ahead of the shim's.
if [ -x "$TARGETS/heapload-static-jemalloc" ]; then
	start_env LD_PRELOAD="$SHIM" -- heapload-static-jemalloc
	sleep 0.3
	check "own malloc: the program runs (ticks)" grep -q '^tick' "$WORK/heapload-static-jemalloc.out"
	"$ATTACH" -p "$TPID" -t heap -o "$WORK/own.pb.gz" 2>"$WORK/own.err"
	rc=$?
	check "own malloc: exit 3 and one line saying why ($(cat "$WORK/own.err"))" sh -c "
		[ $rc = 3 ] && [ \$(wc -l <'$WORK/own.err') = 1 ] &&
		grep -q 'stays out of the way in it: malloc is defined by .*heapload-static-jemalloc, ahead of libcprof.so' '$WORK/own.err'"
else
	echo "skip: heapload-static-jemalloc not built (needs libjemalloc-dev)"
fi

# ulimit -v: the program's own peak without the shim, plus 1 GiB.
start_target heapload
sleep 0.5
peak=$(awk '/^VmPeak/ { print $2 }' /proc/"$TPID"/status)
kill -9 "$TPID" 2>/dev/null
wait "$TPID" 2>/dev/null
limit=$((peak + 1048576))
( ulimit -v "$limit" && LD_PRELOAD=$SHIM CPROF_SAMPLE_RATE=65536 exec "$TARGETS/heapload" ) \
	>"$WORK/heapload.out" 2>&1 &
TPID=$!
PIDS="$PIDS $TPID"
for i in $(seq 1 200); do grep -q '^ready' "$WORK/heapload.out" && break; sleep 0.05; done
check "ulimit -v $limit KiB (peak $peak KiB + 1 GiB): the program starts under the shim" grep -q '^ready' "$WORK/heapload.out"
"$ATTACH" -p "$TPID" -t heap -o "$WORK/ulimit.pb.gz" 2>"$WORK/ulimit.err"
"$PBDUMP" "$WORK/ulimit.pb.gz" >"$WORK/ulimit.txt"
live_sets ulimit
check "ulimit -v: cprof-attach reports the missing pool" grep -q 'has no pool' "$WORK/ulimit.err"
check "ulimit -v: VSZ stays under the limit ($(awk '/^VmPeak/ { print $2 }' /proc/"$TPID"/status) KiB)" \
	[ "$(awk '/^VmPeak/ { print $2 }' /proc/"$TPID"/status)" -le "$limit" ]

# Strict overcommit is machine-wide: only where the caller allows it.
om=/proc/sys/vm/overcommit_memory
if [ "${CPROF_TEST_OVERCOMMIT:-0}" = 1 ] && [ -w "$om" ]; then
	old=$(cat "$om")
	echo 2 >"$om"
	start_env LD_PRELOAD="$SHIM" CPROF_SAMPLE_RATE=65536 -- heapload
	echo "$old" >"$om"
	"$ATTACH" -p "$TPID" -t heap -o "$WORK/strict.pb.gz" 2>"$WORK/strict.err"
	"$PBDUMP" "$WORK/strict.pb.gz" >"$WORK/strict.txt"
	live_sets strict
else
	echo "skip: vm.overcommit_memory=2 is machine-wide; set CPROF_TEST_OVERCOMMIT=1 (as root) to test it"
fi
finish
