#!/usr/bin/env bash
# Block and mutex profiles in libcprof.so's segment, checked against the
# targets' own clocks before any cprof-attach writer reads them:
# tests/targets/locks (C) and locks_cxx (std::mutex, condition_variable,
# shared_mutex) run 4 s at CPROF_BLOCK_RATE=10us and CPROF_MUTEX_FRACTION=10,
# stop, and print what they waited per site; tests/tools/waitsites reads
# the segment through cprof-attach's reader. Bars (issue 15): each waiting
# site's delay within 25%; the mutex profile's total within 35% of the
# waits on the locks (15% where every 40th hold lasts 50 ms: issue 26,
# item 10), and at least 70% of it on holder_release. Also: a
# fork while a mutex is held and waited for leaves a working child; a
# rejected setting keeps the default (and says so under CPROF_DEBUG); 0
# turns each profile off.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libcprof.so
SITES=$B/tests/tools/waitsites

# truth NAME SITE: the nanoseconds the target says it waited in SITE.
truth() {
	awk -v s="$2" '$1 == "wait" && $2 == s { print $4 }' "$WORK/$1.out"
}

# got FILE KIND SITE: the segment's estimated delay for KIND (block, mutex) at SITE.
got() {
	awk -v k="$2" -v s="$3" '$1 == k && $2 == s { t += $5 } END { print t + 0 }' "$1"
}

# check_block NAME SITE...: each site's block delay within 25% of the truth.
check_block() {
	local name=$1 s want have
	shift
	for s in "$@"; do
		want=$(truth "$name" "$s")
		have=$(got "$WORK/$name.sites" block "$s")
		check "$name: block delay at $s $have ns, the target measured $want (within 25%)" \
			near "$have" "$want" "$(awk -v w="$want" 'BEGIN { print w * 0.25 }')"
	done
}

# check_mutex NAME TRUTH_NS [PERCENT]: total within 35% (or PERCENT), >= 70% on holder_release.
check_mutex() {
	local name=$1 want=$2 pct=${3:-35} total holder
	total=$(awk '$1 == "mutex" { t += $5 } END { print t + 0 }' "$WORK/$name.sites")
	holder=$(got "$WORK/$name.sites" mutex holder_release)
	check "$name: mutex delay $total ns, the waiters measured $want (within $pct%)" \
		near "$total" "$want" "$(awk -v w="$want" -v p="$pct" 'BEGIN { print w * p / 100 }')"
	check "$name: holder_release has $(awk -v h="$holder" -v t="$total" 'BEGIN { printf "%.1f", t ? 100 * h / t : 0 }')% of the mutex delay (at least 70%)" \
		awk -v h="$holder" -v t="$total" 'BEGIN { exit !(t > 0 && h >= 0.7 * t) }'
}

# C: mutexes, a condition variable (also timed), a semaphore; and the fork.
run_locks locks -f
check "locks: a fork while a mutex is held and waited for leaves a working child" \
	grep -q '^fork ok$' "$WORK/locks.out" || cat "$WORK/locks.out" >&2
"$SITES" "$TPID" >"$WORK/locks.sites"
check "waitsites reads the segment" grep -q '^header 10000 10 ' "$WORK/locks.sites" || cat "$WORK/locks.sites" >&2
check_block locks waiter_take cond_waiter cond_waiter_timed sem_waiter
m=$(awk '$1 == "lockwait" { t += $4 } END { print t }' "$WORK/locks.out")
check_mutex locks "$m"
kill "$TPID" 2>/dev/null

# A few releases that carry much of the waiting, as on a loaded machine
# (a fresh-clone make check read 2.4 times the truth; 0.60-1.25 in 6 runs
# beside 6 busy loops at nice -15): every 40th hold lasts 50 ms. Drawn 1
# in 10 they swung the total 0.91-1.59 in 5 runs; kept whenever charged
# 10 ms or more (shim/contend.h), 0.97-1.03. The rest are drawn 1 in 10
# from about 3000 releases a run: one standard deviation is about 2%.
run_locks locks -l 40
"$SITES" "$TPID" >"$WORK/locks-long.sites"
cp "$WORK/locks.out" "$WORK/locks-long.out"
m=$(awk '$1 == "lockwait" { t += $4 } END { print t }' "$WORK/locks-long.out")
check_mutex locks-long "$m" 15
kill "$TPID" 2>/dev/null

# C++: std::mutex, std::condition_variable (wait and wait_for), std::shared_mutex.
run_locks locks_cxx
"$SITES" "$TPID" >"$WORK/locks_cxx.sites"
check_block locks_cxx waiter_take cond_waiter cond_waiter_timed reader_share
m=$(awk '$1 == "lockwait" { t += $4 } $1 == "wait" && ($2 == "reader_share" || $2 == "writer_update") { t += $4 } END { print t }' "$WORK/locks_cxx.out")
check_mutex locks_cxx "$m"
kill "$TPID" 2>/dev/null

# Settings: a bad value keeps the default; 0 turns a profile off.
TARGET_ENV=(LD_PRELOAD="$SHIM" CPROF_BLOCK_RATE=abc CPROF_MUTEX_FRACTION=-3 CPROF_DEBUG=1)
start_target locks -s 1
check "CPROF_BLOCK_RATE=abc: one line under CPROF_DEBUG" \
	grep -q "^libcprof.so: CPROF_BLOCK_RATE=abc in $TPID is not a number; using 100000\$" "$WORK/locks.out"
check "CPROF_MUTEX_FRACTION=-3: one line under CPROF_DEBUG" \
	grep -q "^libcprof.so: CPROF_MUTEX_FRACTION=-3 in $TPID is negative; using 10\$" "$WORK/locks.out"
sleep 1.5
"$SITES" "$TPID" >"$WORK/bad.sites"
check "rejected settings: the defaults are in force" grep -q '^header 100000 10 ' "$WORK/bad.sites"
kill "$TPID" 2>/dev/null

TARGET_ENV=(LD_PRELOAD="$SHIM" CPROF_BLOCK_RATE=0 CPROF_MUTEX_FRACTION=0 CPROF_SAMPLE_RATE=0)
start_target locks -s 1
sleep 1.5
"$SITES" "$TPID" >"$WORK/off.sites"
check "CPROF_BLOCK_RATE=0 CPROF_MUTEX_FRACTION=0: both off, nothing recorded" \
	sh -c "grep -q '^header 0 0 ' '$WORK/off.sites' && ! grep -qE '^(block|mutex) ' '$WORK/off.sites'"
kill "$TPID" 2>/dev/null
finish
