#!/usr/bin/env bash
# A process that exits during a heap or allocs window (a compiler run, a
# batch step) keeps its profile: cprof-attach holds its segment (a memfd,
# through /proc/PID/map_files) and reads what it had at the exit, writes
# the profile, says so and exits 5 (partial), as soon as the process is
# gone. The shortjob target keeps 32 MiB in job_alloc() after the window
# began, then exits: job_alloc's allocated and in-use bytes are within
# 15% of 32 MiB (sampled at 64 KiB: 512 blocks of 64 KiB, each sampled).
# Without the right to hold the segment (an unprivileged user) it is
# copied every 250 ms during the window and the last copy stands. Its
# non-PIE build, which takes malloc's address, has a heap profile at all.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libcprof.so
want=33554432

# value INDEX FUNCTION FILE: sum of sample value INDEX over stacks whose leaf is FUNCTION.
value() {
	awk -v i="$1" -v f="$2" '/^sample / { split($2, v, ","); s = $0; sub(/.* stack /, "", s); n = split(s, fr, ";"); if (fr[n] == f) t += v[i] } END { print t + 0 }' "$3"
}

# one_job KIND INDEX LINGER_MS [RUNAS...]: the window, the job's exit, the profile.
one_job() {
	local kind=$1 idx=$2 linger=$3 rc t0 t1 got
	shift 3
	"$@" env LD_PRELOAD="$SHIM" CPROF_SAMPLE_RATE=65536 "$TARGETS/shortjob" "$linger" >"$WORK/job.out" 2>&1 &
	TPID=$!
	PIDS="$PIDS $TPID"
	for i in $(seq 1 100); do grep -q '^ready' "$WORK/job.out" 2>/dev/null && break; sleep 0.05; done
	t0=$(date +%s%N)
	"$@" "${REAL_ATTACH:-$ATTACH}" -p "$TPID" -t "$kind" -d 30s -o "$WORK/$kind.pb.gz" 2>"$WORK/$kind.err" &
	local ap=$!
	# The job starts once the window has (cprof-attach says so).
	for i in $(seq 1 200); do grep -q 'during the next' "$WORK/$kind.err" 2>/dev/null && break; sleep 0.05; done
	sleep 0.2
	kill -USR1 "$TPID"
	wait "$ap"
	rc=$?
	t1=$(date +%s%N)
	cat "$WORK/$kind.err"
	check "$kind: exit 5 (got $rc) and says the process exited" \
		sh -c "[ $rc = 5 ] && grep -q 'exited during the capture; the profile holds what was collected' '$WORK/$kind.err'"
	check "$kind: done within 10 s of a 30 s window ($(((t1 - t0) / 1000000)) ms)" [ $(((t1 - t0) / 1000000)) -lt 10000 ]
	"$PBDUMP" "$WORK/$kind.pb.gz" >"$WORK/$kind.txt"
	got=$(value "$idx" job_alloc "$WORK/$kind.txt")
	check "$kind: job_alloc $got bytes, within 15% of $want" near "$got" "$want" $((want * 15 / 100))
}

one_job allocs 2 100
grep -q 'last copy of its segment' "$WORK/allocs.err" && echo "note: the segment was not held (not root?)"
one_job heap 4 100

# A non-PIE program that takes malloc's address (its table of allocators)
# has a canonical PLT entry for it, which dlsym(RTLD_DEFAULT) returns: the
# shim took it for an allocator ahead of it and refused every profile.
nopie="$TARGETS/shortjob-nopie"
plt=$(readelf -sW "$nopie" | awk '$8 ~ /^malloc(@|$)/ && $7 == "UND" && $2 !~ /^0+$/ { print $2; exit }')
check "shortjob-nopie has a canonical PLT entry for malloc (${plt:-none})" [ -n "$plt" ]
env LD_PRELOAD="$SHIM" CPROF_SAMPLE_RATE=65536 "$nopie" 30000 >"$WORK/nopie.out" 2>&1 &
TPID=$!
PIDS="$PIDS $TPID"
for i in $(seq 1 100); do grep -q '^ready' "$WORK/nopie.out" 2>/dev/null && break; sleep 0.05; done
kill -USR1 "$TPID"
for i in $(seq 1 100); do grep -q '^done' "$WORK/nopie.out" 2>/dev/null && break; sleep 0.05; done
"$ATTACH" -p "$TPID" -t heap -o "$WORK/nopie.pb.gz" 2>"$WORK/nopie.err"
rc=$?
cat "$WORK/nopie.err"
check "non-PIE with malloc's address taken: heap exit 0 (got $rc)" [ "$rc" = 0 ]
"$PBDUMP" "$WORK/nopie.pb.gz" >"$WORK/nopie.txt"
got=$(value 4 job_alloc "$WORK/nopie.txt")
check "non-PIE: job_alloc holds $got bytes, within 15% of $want" near "$got" "$want" $((want * 15 / 100))
kill "$TPID" 2>/dev/null

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 777 "$WORK"
	one_job allocs 2 800 setpriv --reuid=65534 --regid=65534 --clear-groups
	check "unprivileged: the last copy stands, and the note says how old it is" \
		grep -q 'its profile is the last copy of its segment, [0-9]* ms before the exit' "$WORK/allocs.err"
else
	echo "not root or no setpriv: the unprivileged fallback not tested"
fi
finish
