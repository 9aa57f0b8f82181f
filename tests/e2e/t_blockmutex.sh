#!/usr/bin/env bash
# -t block and -t mutex end to end: cprof-attach reads libcprof.so's
# segment of tests/targets/locks (C) and locks_cxx (std::mutex,
# condition_variable, shared_mutex), run 4 s at CPROF_BLOCK_RATE=10us and
# CPROF_MUTEX_FRACTION=10, and the profiles it writes are held against the
# targets' own clocks (issue 15's bars): each waiting site's block delay
# within 25%; the mutex profile's total within 35% of the waiters' waits,
# at least 70% of it on holder_release. Also: Go's sample types, the legacy
# text form, folded weighted by delay, a window (-d), and the errors
# without the shim or with a profile turned off.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libcprof.so

# truth NAME SITE: the nanoseconds the target says it waited in SITE.
truth() {
	awk -v s="$2" '$1 == "wait" && $2 == s { print $4 }' "$WORK/$1.out"
}

# delay FILE SITE: the delay of the folded stacks through SITE.
delay() {
	awk -v s="$2" '{ n = split($0, w, " "); v = w[n]; st = substr($0, 1, length($0) - length(v) - 1)
		if ((";" st ";") ~ (";" s ";")) t += v } END { printf "%.0f\n", t }' "$1"
}

# total FILE: all the delay in a folded file.
total() {
	awk '{ t += $NF } END { printf "%.0f\n", t }' "$1"
}

# profiles NAME: capture block and mutex of target NAME (pprof and folded).
profiles() {
	local k
	for k in block mutex; do
		"$ATTACH" -p "$TPID" -t $k -o "$WORK/$1-$k.pb.gz" -q ||
			fail "$1: cprof-attach -t $k failed"
		"$ATTACH" -p "$TPID" -t $k --format folded -o "$WORK/$1-$k.folded" -q ||
			fail "$1: cprof-attach -t $k --format folded failed"
	done
}

# check_block NAME SITE...: each site's block delay within 25% of the truth.
check_block() {
	local name=$1 s want have
	shift
	for s in "$@"; do
		want=$(truth "$name" "$s")
		have=$(delay "$WORK/$name-block.folded" "$s")
		check "$name: -t block delay at $s $have ns, the target measured $want (within 25%)" \
			near "$have" "$want" "$(awk -v w="$want" 'BEGIN { print w * 0.25 }')"
	done
}

# check_mutex NAME TRUTH_NS: total within 35%, >= 70% on holder_release.
check_mutex() {
	local name=$1 want=$2 all holder
	all=$(total "$WORK/$name-mutex.folded")
	holder=$(delay "$WORK/$name-mutex.folded" holder_release)
	check "$name: -t mutex delay $all ns, the waiters measured $want (within 35%)" \
		near "$all" "$want" "$(awk -v w="$want" 'BEGIN { print w * 0.35 }')"
	check "$name: holder_release has $(awk -v h="$holder" -v t="$all" 'BEGIN { printf "%.1f", t ? 100 * h / t : 0 }')% of the mutex delay (at least 70%)" \
		awk -v h="$holder" -v t="$all" 'BEGIN { exit !(t > 0 && h >= 0.7 * t) }'
}

run_locks locks
profiles locks
"$PBDUMP" "$WORK/locks-block.pb.gz" >"$WORK/locks-block.txt"
check "block: Go's sample types (contentions/count, delay/nanoseconds)" \
	sh -c "head -2 '$WORK/locks-block.txt' | tr '\n' ' ' | grep -q '^sample_type contentions count sample_type delay nanoseconds '"
check "block: period type contentions/count, period 1" \
	sh -c "grep -q '^period_type contentions count$' '$WORK/locks-block.txt' && grep -q '^period 1$' '$WORK/locks-block.txt'"
check_block locks waiter_take cond_waiter cond_waiter_timed sem_waiter
# Each wait says what it waited on (the "primitive" label): waiter_take
# only on its mutex, sem_waiter on its semaphore; cond_waiter on its
# condition variable mostly, and on the mutex it takes before (told apart).
prim_share() { # SITE PRIMITIVE: the share of SITE's delay labelled PRIMITIVE
	awk -v s="$1" -v p="primitive=$2" '/^sample / && ($0 ~ (";" s ";") || $0 ~ (";" s "$")) {
		split($2, v, ","); all += v[2]; if (index($0, p)) k += v[2] }
		END { printf "%.3f", all ? k / all : 0 }' "$WORK/locks-block.txt"
}
for sp in waiter_take:mutex:0.999 sem_waiter:semaphore:0.999 cond_waiter:condvar:0.5; do
	s=${sp%%:*} r=${sp#*:} p=${r%%:*} min=${r#*:}
	got=$(prim_share "$s" "$p")
	check "block: $s's delay labelled primitive=$p: $got (at least $min)" below "$min" "$got"
done
check_mutex locks "$(awk '$1 == "lockwait" { t += $4 } END { print t }' "$WORK/locks.out")"
"$ATTACH" -p "$TPID" -t mutex --format text -o "$WORK/locks-mutex.txt" -q
check "mutex --format text: Go's legacy contention form" \
	sh -c "head -2 '$WORK/locks-mutex.txt' | tr '\n' ' ' | grep -q '^--- mutex: cycles/second=1000000000 '"
"$ATTACH" -p "$TPID" -t block --format text -o "$WORK/locks-block.legacy" -q
check "block --format text: headed '--- contention:', as Go names it" \
	sh -c "head -1 '$WORK/locks-block.legacy' | grep -q '^--- contention:$'"
if command -v go >/dev/null; then
	check "go tool pprof reads the legacy block form: delay in seconds" \
		sh -c "go tool pprof -top '$WORK/locks-block.legacy' 2>&1 | grep -q '^Type: delay'"
fi
kill "$TPID" 2>/dev/null

run_locks locks_cxx
profiles locks_cxx
check_block locks_cxx waiter_take cond_waiter cond_waiter_timed reader_share
check_mutex locks_cxx "$(awk '$1 == "lockwait" { t += $4 } $1 == "wait" && ($2 == "reader_share" || $2 == "writer_update") { t += $4 } END { print t }' "$WORK/locks_cxx.out")"
kill "$TPID" 2>/dev/null

# A window: the waits of the next second only, on a target still running.
TARGET_ENV=(LD_PRELOAD="$SHIM" CPROF_BLOCK_RATE=10us CPROF_MUTEX_FRACTION=10)
start_target locks
TARGET_ENV=()
sleep 2
"$ATTACH" -p "$TPID" -t block -d 1s --format folded -o "$WORK/win.folded" 2>"$WORK/win.err"
rc=$?
check "block -d 1s: exit 0 (got $rc)" [ "$rc" = 0 ]
w=$(delay "$WORK/win.folded" waiter_take)
# Two waiters, each waiting most of the second on M.
check "block -d 1s: waiter_take's delay is the window's ($w ns: 0.8-2.2 s of two waiters' time)" \
	awk -v w="$w" 'BEGIN { exit !(w > 0.8e9 && w < 2.2e9) }'
check "block -d 1s: says it waits for the window" grep -q "block waited during the next 1s" "$WORK/win.err"
kill "$TPID" 2>/dev/null

# Turned off in the target: an error naming the variable.
TARGET_ENV=(LD_PRELOAD="$SHIM" CPROF_MUTEX_FRACTION=0)
start_target locks
TARGET_ENV=()
sleep 0.5
"$ATTACH" -p "$TPID" -t mutex -o "$WORK/off.pb.gz" 2>"$WORK/off.err"
rc=$?
cat "$WORK/off.err"
check "mutex off in the target: exit 3 (got $rc)" [ "$rc" = 3 ]
check "mutex off: the error names CPROF_MUTEX_FRACTION" grep -q "CPROF_MUTEX_FRACTION" "$WORK/off.err"
check "mutex off: no file" [ ! -e "$WORK/off.pb.gz" ]
kill "$TPID" 2>/dev/null

# Without the shim: the heap's error and LD_PRELOAD line.
start_target locks
"$ATTACH" -p "$TPID" -t block -o "$WORK/none.pb.gz" 2>"$WORK/none.err"
rc=$?
check "block without libcprof.so: exit 3 (got $rc)" [ "$rc" = 3 ]
check "block without libcprof.so: says how to start it" grep -q "LD_PRELOAD=.*libcprof.so" "$WORK/none.err"
kill "$TPID" 2>/dev/null
finish
