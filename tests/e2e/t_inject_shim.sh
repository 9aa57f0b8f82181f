#!/usr/bin/env bash
# The shim's side of injection (issue 30, doc/inject.md), without ptrace:
# injectee loads libcprof.so itself with dlopen while 8 threads churn,
# arms and disarms it by GOT slot rewriting. 200 arm/disarm cycles with
# the first window's heap (32 MiB kept in 2 KiB blocks) within 15% at a
# 64 KiB rate, every 50th within 25%, the others' 4 MiB within 0.4x to
# 2.5x (a re-arm forgets what came before), blocks from before and after each arm freed through the restored slots,
# the threads' checksums intact; the same with jemalloc and tcmalloc
# linked in (each kept as the allocator); the lock family gives block and
# mutex buckets; a fork while armed and while dormant; a library loaded
# while armed is patched and restored, one unloaded while armed is left
# alone; a preloaded shim refuses to arm, and so does one whose process
# may not make a page writable (seccomp); the shim disarms itself when
# nobody reads it for 10 s; and cprof-attach reads an armed injected shim's
# segment as it reads a preloaded one's.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libcprof.so

# injected NAME ARGS...: run injectee NAME with ARGS, check its lines, exit status and "done".
injected() {
	local name=$1 out
	shift
	out=$WORK/$name-$1.out
	timeout 120 "$TARGETS/$name" "$SHIM" "$@" >"$out" 2>&1
	check "$name $*: exits 0" [ $? = 0 ]
	check "$name $*: no check failed" sh -c "! grep '^FAIL' '$out'"
	check "$name $*: finished" grep -q '^done' "$out"
	grep -E '^(ok|FAIL)' "$out" | grep -v '^ok cycle [1-9]' | sed "s/^/    $name: /" || true
}

injected injectee heap 200
check "injectee: window checks made (one at 15%, three at 25%)" [ "$(grep -c '^ok cycle .*within \(15\|25\)%' "$WORK/injectee-heap.out")" = 4 ]
for a in jemalloc tcmalloc; do
	if [ -x "$TARGETS/injectee-$a" ]; then
		injected "injectee-$a" heap 200
		check "injectee-$a: the allocator is $a's" grep -q "allocator lib$a" "$WORK/injectee-$a-heap.out"
	else
		echo "lib$a not installed: its variant not tested"
	fi
done
injected injectee locks
injected injectee fork
injected injectee eject
injected injectee plugin "$TARGETS/libinjplugin.so"
injected injectee seccomp
out=$WORK/injectee-preloaded.out
LD_PRELOAD=$SHIM timeout 60 "$TARGETS/injectee" "$SHIM" preloaded >"$out" 2>&1
check "preloaded: exits 0, arm refused" sh -c "[ $? = 0 ] && grep -q '^ok preloaded: arm refused' '$out'"

# cprof-attach reads the armed injected shim's segment, found by the maps.
start_target injectee "$SHIM" hold
tp=$TPID
"$ATTACH" -p "$tp" -t heap -o "$WORK/heap.pb.gz" -q
check "heap capture of the injected shim exits 0" [ $? = 0 ]
"$PBDUMP" "$WORK/heap.pb.gz" >"$WORK/heap.txt"
got=$(awk '/^sample / { split($2, v, ","); s = $0; sub(/.* stack /, "", s); if (s ~ /keep_inject/) t += v[4] } END { print t + 0 }' "$WORK/heap.txt")
check "keep_inject in use: $got bytes, truth 33554432 (within 15%)" near "$got" 33554432 5033164
finish
