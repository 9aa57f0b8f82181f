#!/usr/bin/env bash
# The shim takes and releases a default mutex itself, as glibc does (one
# compare-and-swap, the owner and user count: shim/locks.c), where the
# next pthread_mutex_lock is glibc's own: mutual exclusion must hold and
# glibc's owner field must name the holder. lockstress's threads count
# increments of one shared counter under one mutex, through lock,
# trylock, timedlock and condition waits (glibc's internal relock); the
# shared count equals the threads' own counts, every holder finds its id
# in the owner field, a forked child finds its own, and a recursive mutex
# still recurses: without the shim, with it (inline, said by CPROF_DEBUG),
# with CPROF_LOCK_NO_INLINE (the trylock path), and with a mutex capture
# running meanwhile, every release recorded (waiters' side table busy).
. "$(dirname "$0")/lib.sh"

SHIM=$B/libcprof.so

# one NAME ENV...: run lockstress 4 threads for 2 s with ENV; check its verdict.
one() {
	local name=$1
	shift
	env "$@" "$TARGETS/lockstress" 4 2 >"$WORK/$name.out" 2>&1
	local rc=$?
	check "$name: exit 0 ($rc): $(grep -E '^(count|fork)' "$WORK/$name.out" | tr '\n' ' ')" [ "$rc" = 0 ]
}

one alone
one inline LD_PRELOAD="$SHIM" CPROF_DEBUG=1
check "inline: the shim says it takes default mutexes itself" \
	grep -q 'default mutexes taken as glibc takes them' "$WORK/inline.out"
one trylock LD_PRELOAD="$SHIM" CPROF_DEBUG=1 CPROF_LOCK_NO_INLINE=1
check "trylock: the shim says it goes through the trylock" \
	grep -q 'through the next pthread_mutex_trylock' "$WORK/trylock.out"

# A capture meanwhile: every contended release charged through the side table.
TARGET_ENV=(LD_PRELOAD="$SHIM" CPROF_MUTEX_FRACTION=1 CPROF_BLOCK_RATE=1)
start_target lockstress 4 3
TARGET_ENV=()
"$ATTACH" -p "$TPID" -t mutex -d 1s -o "$WORK/m.pb.gz" -q
rc=$?
check "captured: cprof-attach -t mutex exits 0 ($rc)" [ "$rc" = 0 ]
n=$("$PBDUMP" "$WORK/m.pb.gz" | grep -c '^sample ')
check "captured: the mutex profile has samples ($n)" [ "$n" -gt 0 ]
wait "$TPID"
rc=$?
check "captured: exit 0 ($rc): $(grep -E '^(count|fork)' "$WORK/lockstress.out" | tr '\n' ' ')" [ "$rc" = 0 ]
finish
