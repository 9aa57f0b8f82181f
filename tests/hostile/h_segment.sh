#!/usr/bin/env bash
# h_segment — a plain process (not libcprof.so), run by the unprivileged
# attacker, forges the shim's segment where cprof-attach looks for it (a
# memfd named cprof-segment) and claims all the layout allows: 262144
# buckets of 64 distinct frames, 65536 label sets whose keys collide with
# cprof's and Pyroscope's (service_name, __name__, __x, tid) and whose
# strings have no NUL, 32768 label slots of which 200 are its own idle
# threads and the rest threads that do not exist, every slot's change
# count bumped by a whole ring of distinct times every millisecond. Then
# one whose stacks all share 32768 return addresses in libc (the most
# stacks per distinct frame), 16 forked processes each forging a segment
# of its own (--children), and one whose header puts a table outside the
# segment. Bounds, per capture: ends within the stated time, peak RSS
# under 200 MiB, exit 0 with a profile (or, for the bad header, one
# error line), each reserved key noted once, SIGTERM obeyed within 2 s,
# the target left running.
source "$(dirname "$0")/lib.sh"

RSS_CAP=200
FORGE=$TARGETS/hostile_segment_forge

# capture NAME MAX_S ARGS...: one bounded capture that must succeed with a profile.
capture() {
	local name=$1 max_s=$2
	shift 2
	bounded "$name" "$max_s" "$RSS_CAP" -p "$TPID" "$@" -o "$WORK/$name.pb.gz"
	check "$name exits 0 (exit $RC: $(tail -1 "$WORK/$name.stderr" | head -c 300))" test "$RC" = 0
	check "$name writes a profile" test -s "$WORK/$name.pb.gz"
	alive "$name"
}

echo "-- a segment claiming the most the layout allows, 200 real threads"
start_hostile forge as_attacker "$FORGE" 262144 65536 32768 200 0
for t in heap allocs mutex block; do
	capture "seg_$t" 10 -t "$t"
done
check "seg_heap says what it did not read" grep -q "were not read: past cprof-attach's caps" "$WORK/seg_heap.stderr"
for k in service_name __name__ __x tid; do
	check "seg_heap notes the reserved key $k once" \
		test "$(grep -c "label key \"$k\" of $TPID is reserved" "$WORK/seg_heap.stderr")" = 1
done
check "seg_heap has no program label service_name" \
	sh -c "! zcat '$WORK/seg_heap.pb.gz' | grep -aq service_name"
capture seg_heap_window 10 -t heap -d 2s
capture seg_wall 10 -t wall -d 3s
capture seg_cpu 10 -t cpu -d 3s
check "seg_wall notes the reserved key service_name once" \
	test "$(grep -c 'label key "service_name"' "$WORK/seg_wall.stderr")" = 1
sigterm_within seg_wall_term 1 -p "$TPID" -t wall -d 60s -o "$WORK/seg_wall_term.pb.gz"
check "seg_wall_term writes what it has" test -s "$WORK/seg_wall_term.pb.gz"
alive seg_wall_term
sigterm_within seg_heap_term 1 -p "$TPID" -t heap -d 60s -o "$WORK/seg_heap_term.pb.gz"
alive seg_heap_term
kill "$TPID" 2>/dev/null

echo "-- every stack in libc's code, 32768 return addresses shared"
start_hostile forge_libc as_attacker "$FORGE" 65536 65536 4096 0 3
capture seg_libc_heap 10 -t heap
capture seg_libc_window 10 -t allocs -d 2s
kill "$TPID" 2>/dev/null

echo "-- --children: 16 processes, each with a forged segment of its own addresses"
# Each bumps its slots every 10 ms, not every 1: 17 processes waking every
# millisecond beside a few busy loops keep the kernel's own workers from a
# CPU (doc/limits.md), which stalls any process, cprof-attach or not; this
# bound is cprof's.
start_hostile forge_kids as_attacker "$FORGE" 16384 4096 64 0 1 16 10000
for i in $(seq 1 100); do
	[ "$(grep -l "^PPid:[[:space:]]*$TPID\$" /proc/[0-9]*/status 2>/dev/null | wc -l)" -ge 16 ] && break
	sleep 0.1
done
capture seg_kids_heap 15 -t heap --children
capture seg_kids_window 15 -t heap --children -d 2s
check "seg_kids_heap read 17 processes" grep -q "from 17 processes" "$WORK/seg_kids_heap.stderr"
kill "$TPID" 2>/dev/null

echo "-- a table outside the segment"
start_hostile forge_bad as_attacker "$FORGE" 1024 64 64 0 4
bounded seg_bad 5 "$RSS_CAP" -p "$TPID" -t heap -o "$WORK/seg_bad.pb.gz"
check "seg_bad fails (exit $RC)" test "$RC" != 0
check "seg_bad says why in one line" \
	sh -c "test \$(wc -l <'$WORK/seg_bad.stderr') = 1 && grep -q 'cannot read the profile.*inconsistent' '$WORK/seg_bad.stderr'"
alive seg_bad
kill "$TPID" 2>/dev/null

finish
