#!/usr/bin/env bash
# sampler: both
# Labels from inside the program (include/cprof.h), end to end (issue 18's
# bars). tests/targets/labelserver, under the shim at a 64 KiB sampling
# rate (16 KiB for the heap), serves two request types through the same code, told apart only by
# the labels each request pushes (endpoint=/search: 3 units of CPU, 2 KiB
# blocks; endpoint=/upload: 1 unit, 64 KiB blocks), and measures each
# type's CPU and live bytes itself:
#  - cpu (this run's sampler): `go tool pprof -tags` shows each
#    endpoint's share within 5 percentage points of the target's own;
#  - heap: `-tagfocus endpoint=X` isolates each type's live bytes within
#    15%: /search's 16384 live 2 KiB blocks are each sampled with
#    p = 1 - e^(-2/16) = 0.118 (1930 on average), so its estimate has a
#    standard deviation of sqrt((1 - p) / (16384 p)) = 2.1%; /upload's
#    64 KiB blocks 0.4%. At 64 KiB (p = 0.031, sd 4.4%) CI read /search
#    +13.3% and +15.5% in one run (2026-11-27);
#  - the thread dump shows the labels of each worker inside a request,
#    none on one reading its clock between requests;
#  - the same programs without the shim: the calls are no-ops, the work
#    and its result the same (labelserver; the C++ RAII wrapper of
#    doc/labels.md, labels_cxx, whose dump also shows that a scope left
#    by an exception restored the labels);
#  - fork (labelmisuse -f): the child's thread has the inherited labels
#    and what it pushed over them; its heap keeps the parent's labels on
#    the inherited block and its own on its new one;
#  - past the limits (labelmisuse): the first 8 keys kept, a long value
#    cut to 63 bytes, cprof's own key left out, and a one-line warning.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libcprof.so

# field NAME KEY: KEY=VALUE's value in the target's last "end" line.
field() {
	grep '^end' "$WORK/$1.out" | tail -1 | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# tag_share FILE VALUE: VALUE's percentage under "endpoint:" in go tool pprof -tags.
tag_share() {
	go tool pprof -tags "$1" 2>/dev/null | awk -v v="$2" '
		/^ *endpoint:/ { on = 1; next } /^ *[a-z]+:/ { on = 0 }
		on && $NF == v && match($0, /\( *[0-9.]+%\)/) {
			p = substr($0, RSTART + 1, RLENGTH - 3); gsub(/ /, "", p); print p; found = 1 }
		END { if (!found) print 0 }'
}

# focus_bytes FILE VALUE: the inuse bytes of samples with endpoint=VALUE.
focus_bytes() {
	go tool pprof -sample_index=inuse_space -unit=bytes -tagfocus "endpoint=$2" -top "$1" \
		2>/dev/null | sed -n 's/^Showing nodes accounting for \([0-9]*\)B.*/\1/p'
}

# As many workers as CPUs: with more, a ptrace stop of a runnable thread
# lands where it was preempted, at a system call's exit, and /search read
# 84-86% for a truth of 89.7% at 4 workers on 2 CPUs (perf 89.9%; ptrace
# with 2 workers 90.6%): doc/limits.md.
TARGET_ENV=(LD_PRELOAD="$SHIM" CPROF_SAMPLE_RATE=64k)
start_target labelserver -w "$(n=$(nproc); [ "$n" -lt 2 ] && n=2; echo "$n")"
TARGET_ENV=()
grep -q 'active=1' "$WORK/labelserver.out" || fail "labelserver: the shim did not take its labels"
sleep 0.5 # the workers are under way

# CPU: the target's own clocks around the capture. The share's spread
# beside 4 busy loops (doc/measurements.md), where the workers get a third
# of a CPU each: with ptrace the CPU of each stop that finds a worker
# preempted (half of it) takes the labels of its last stop found running,
# so /search's share read sd 4.1 points at 4 s x 100 Hz (10 runs) and 1.2
# at 8 s x 250 Hz (12 runs, mean -1.0), where 5 points is 3.4 sd; perf at
# 4 s x 100 Hz read +1.3, -3.2, +1.4, -6.6 in four loaded make checks.
# Both take the longer capture.
ask_target labelserver
s0=$(field labelserver cpu_search) u0=$(field labelserver cpu_upload)
"$ATTACH" -p "$TPID" -d 8s -F 250 -o "$WORK/cpu.pb.gz" -q || fail "cpu capture failed"
ask_target labelserver
s1=$(field labelserver cpu_search) u1=$(field labelserver cpu_upload)
want=$(awk -v s=$((s1 - s0)) -v u=$((u1 - u0)) 'BEGIN { printf "%.2f", 100 * s / (s + u) }')
got_s=$(tag_share "$WORK/cpu.pb.gz" /search)
got_u=$(tag_share "$WORK/cpu.pb.gz" /upload)
echo "cpu${SAMPLER:+ ($SAMPLER)}: /search $got_s% (target: $want%), /upload $got_u%"
check "cpu: /search's share within 5 points of the target's ($got_s% vs $want%)" \
	near "$got_s" "$want" 5
check "cpu: /upload's share within 5 points of the target's ($got_u% vs $(awk -v w="$want" 'BEGIN { print 100 - w }')%)" \
	near "$got_u" "$(awk -v w="$want" 'BEGIN { print 100 - w }')" 5
# burn runs only inside a request: its CPU without the endpoint label is
# CPU given the labels of another time. With ptrace on a busy machine,
# CPU carried from a stop found waiting (at a call's exit between two
# requests) to the last stack found running took that stop's labels, and
# most of burn's went unlabelled (doc/measurements.md).
unl=$("$PBDUMP" "$WORK/cpu.pb.gz" | awk '/^sample / && / stack .*;burn($|;)/ {
	split($2, v, ","); all += v[2]; if ($0 !~ /endpoint=/) u += v[2] }
	END { printf "%.1f", all ? 100 * u / all : 100 }')
check "cpu: burn's samples carry their request's labels ($unl% without)" \
	awk -v u="$unl" 'BEGIN { exit !(u < 5) }'

# Heap: each type's live bytes, cut by its label, from a target sampling
# at 16 KiB (the statistics above; the cpu part keeps 64 KiB).
kill "$TPID"
TARGET_ENV=(LD_PRELOAD="$SHIM" CPROF_SAMPLE_RATE=16k)
start_target labelserver -w 4
TARGET_ENV=()
for i in $(seq 1 100); do # until the live sets are full (each type's live bytes reported)
	ask_target labelserver
	[ "$(field labelserver live_search)" = 33554432 ] && [ "$(field labelserver live_upload)" = 67108864 ] && break
	sleep 0.1
done
"$ATTACH" -p "$TPID" -t heap -o "$WORK/heap.pb.gz" -q || fail "heap capture failed"
for t in search upload; do
	live=$(field labelserver live_$t)
	got=$(focus_bytes "$WORK/heap.pb.gz" /$t)
	echo "heap: endpoint=/$t ${got:-0} bytes live (target: $live)"
	check "heap: -tagfocus endpoint=/$t within 15% of its live bytes" \
		near "${got:-0}" "$live" "$(awk -v l="$live" 'BEGIN { print 0.15 * l }')"
done

# Grouped by the program's labels (folded): each endpoint a root frame,
# the heap's live bytes under it as -tagfocus finds them; the summary
# lists the program's keys.
"$ATTACH" -p "$TPID" -t heap --format folded --group-by endpoint -o "$WORK/heap.folded" -q \
	--summary json >"$WORK/heap.json" || fail "heap folded capture failed"
for t in search upload; do
	live=$(field labelserver live_$t)
	got=$(awk -v r="endpoint=/$t" '{ split($1, a, ";"); if (a[1] == r) s += $NF } END { print s + 0 }' "$WORK/heap.folded")
	check "--group-by endpoint: endpoint=/$t roots $got bytes, within 15% of its live $live" \
		near "$got" "$live" "$(awk -v l="$live" 'BEGIN { print 0.15 * l }')"
done
check "--summary json lists the program's label keys ($(cat "$WORK/heap.json"))" \
	grep -q '"label_keys":\[[^]]*"endpoint","tenant"' "$WORK/heap.json"

# The thread dump: each worker inside a request (in burn, between the
# push and the pop) shows both labels; one reading its clock, outside the
# labelled region, none (under load, stops land at that call's exit).
# dump_count: "INSIDE LABELLED OUTSIDE STRAY" of $WORK/dump.txt's workers.
dump_count() { awk '
	function flush() { if (!w) return
		if (burn) { inside++; labelled += lab }
		else if (clock) { outside++; stray += lab } }
	/^thread / { flush(); w = 1; burn = clock = lab = 0; next }
	/^    labels: endpoint=\/(search|upload) tenant=[abc]$/ { lab = 1 }
	/ burn\+0x/ { burn = 1 }
	/ clock_gettime\+0x/ { clock = 1 }
	END { flush(); print inside + 0, labelled + 0, outside + 0, stray + 0 }' "$WORK/dump.txt"; }
# A dump with no worker in a request (each at its clock's exit) says nothing: up to three.
for _ in 1 2 3; do
	"$ATTACH" -p "$TPID" -t threads --format dump -o "$WORK/dump.txt" -q || fail "dump failed"
	read -r inside labelled outside stray < <(dump_count)
	[ "$inside" -ge 1 ] && break
done
check "dump: the workers in a request show their labels ($labelled of $inside)" \
	test "$inside" -ge 1 -a "$labelled" = "$inside"
check "dump: the workers reading their clock, outside, show none ($stray of $outside)" test "$stray" = 0
check "the target is left running, not stopped" not_stopped "$TPID"

# With and without the shim: the same work, the same result.
with=$(env LD_PRELOAD="$SHIM" "$TARGETS/labelserver" -w 3 -n 300 | grep '^done')
without=$("$TARGETS/labelserver" -w 3 -n 300 | grep '^done')
check "labelserver with the shim: done, labels active ($with)" \
	test "${with% active=*}" != "" -a "${with##* }" = active=1
check "labelserver without the shim: the same result, the calls no-ops ($without)" \
	test "${without% active=*}" = "${with% active=*}" -a "${without##* }" = active=0
check "labels_cxx without the shim runs" test "$("$TARGETS/labels_cxx" -n)" = "done active=0"
check "labels_cxx with the shim runs" \
	test "$(LD_PRELOAD="$SHIM" "$TARGETS/labels_cxx" -n)" = "done active=1"

# The RAII wrapper: a scope left by an exception restored the labels.
TARGET_ENV=(LD_PRELOAD="$SHIM")
start_target labels_cxx
TARGET_ENV=()
"$ATTACH" -p "$TPID" -t threads --format dump -o "$WORK/cxx.txt" -q || fail "labels_cxx dump failed"
# labels_of FILE FUNC: the labels line of the thread whose stack holds FUNC.
labels_of() {
	awk -v f="$2" '/^thread/ { l = "(none)" } /^    labels:/ { l = $0 } $0 ~ f { print l; exit }' "$1"
}
check "C++ scope: outer_wait runs under job=outer alone ($(labels_of "$WORK/cxx.txt" outer_wait))" \
	test "$(labels_of "$WORK/cxx.txt" outer_wait)" = "    labels: job=outer"
check "C++ scope: inner_wait runs under job=inner step=2 ($(labels_of "$WORK/cxx.txt" inner_wait))" \
	test "$(labels_of "$WORK/cxx.txt" inner_wait)" = "    labels: job=inner step=2"

# Fork: the child has its parent's labels (sets copied with their ids) and its own.
TARGET_ENV=(LD_PRELOAD="$SHIM" CPROF_SAMPLE_RATE=64k)
start_target labelmisuse -f
TARGET_ENV=()
for i in $(seq 1 100); do grep -q '^child' "$WORK/labelmisuse.out" && break; sleep 0.05; done
cpid=$(awk '/^child/ { print $2 }' "$WORK/labelmisuse.out")
PIDS="$PIDS $cpid"
"$ATTACH" -p "$cpid" -t threads --format dump -o "$WORK/child.txt" -q || fail "child dump failed"
check "fork: the child's thread carries the inherited labels, a=child pushed over them" \
	grep -q "^    labels: a=child b=2 c=3 d=4 e=5 f=6 i=v*\$" "$WORK/child.txt"
"$ATTACH" -p "$cpid" -t heap -o "$WORK/child-heap.pb.gz" -q || fail "child heap failed"
inh=$(go tool pprof -sample_index=inuse_space -unit=bytes -tagfocus 'a=^1$' -top \
	"$WORK/child-heap.pb.gz" 2>/dev/null | sed -n 's/^Showing nodes accounting for \([0-9]*\)B.*/\1/p')
own=$(go tool pprof -sample_index=inuse_space -unit=bytes -tagfocus a=child -top \
	"$WORK/child-heap.pb.gz" 2>/dev/null | sed -n 's/^Showing nodes accounting for \([0-9]*\)B.*/\1/p')
echo "fork: the child's heap: ${inh:-0} bytes under the parent's labels (4 MiB kept), ${own:-0} under a=child (2 MiB)"
# The 4 MiB block is always sampled at its size; a small allocation made
# under the same labels is sampled now and then at ~64 KiB (the rate): CI
# saw 4261909. Allowed: up to 10% over, never under.
check "fork: the inherited 4 MiB block keeps the parent's labels in the child's heap" \
	awk -v v="${inh:-0}" 'BEGIN { exit !(v >= 4194304 && v <= 4194304 * 1.1) }'
check "fork: the child's own 2 MiB block has the child's labels" \
	awk -v v="${own:-0}" 'BEGIN { exit !(v >= 2097152 && v <= 2097152 * 1.1) }'
kill -9 "$TPID" "$cpid" 2>/dev/null

# Past the limits: cut and counted, said in one line, never an error.
TARGET_ENV=(LD_PRELOAD="$SHIM")
start_target labelmisuse
TARGET_ENV=()
"$ATTACH" -p "$TPID" -t threads --format dump -o "$WORK/mis.txt" 2>"$WORK/mis.err" ||
	fail "labelmisuse dump failed"
v63=$(printf 'v%.0s' $(seq 63))
check "past 8 pairs, the first 8 keys kept, a long value cut to 63 bytes, 'thread' left out" \
	grep -qx "    labels: a=1 b=2 c=3 d=4 e=5 f=6 i=$v63" "$WORK/mis.txt"
check "the cut set and the pop without a push are reported ($(cat "$WORK/mis.err" | grep labels))" \
	grep -q "not all recorded: 1 label sets cut.*, 1 unbalanced" "$WORK/mis.err"
finish
