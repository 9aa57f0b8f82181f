#!/usr/bin/env bash
# Sleeping threads of code built with frame pointers (-fno-omit-frame-pointer,
# the default of Fedora and Ubuntu packages) unwind completely without being
# stopped. Such a thread is read from /proc (sp and pc only), and the first
# frame whose CFA is rbp-based needs rbp: it is recovered from the frame
# record on the copied stack. The parking target built that way: every
# thread's stack reaches its start (clone3, or _start for main) in a thread
# snapshot and in a wall profile, with no [partial] root, every group is
# counted at its parking function, and no wait returns EINTR.
. "$(dirname "$0")/lib.sh"

start_target parking-fp
tp=$TPID
nthreads=$(ls /proc/"$tp"/task | wc -l)

# stacks FILE: "COUNT ROOT;...;LEAF" per sample of a profile.
stacks() {
	"$PBDUMP" "$1" | awk '/^sample / { split($2, v, ","); s = $0; sub(/.* stack /, "", s); print v[1], s }'
}

"$ATTACH" -p "$tp" -t threads -o "$WORK/t.pb.gz" --stats -q 2>"$WORK/t.stats" || fail "threads snapshot failed"
stacks "$WORK/t.pb.gz" >"$WORK/t.txt"
bad=$(grep -vE '^[0-9]+ (clone3;start_thread;group_main;|_start;__libc_start_main;__libc_start_call_main;main;)' "$WORK/t.txt")
check "every thread's stack reaches its start (snapshot)" [ -z "$bad" ]
[ -n "$bad" ] && echo "$bad" | cut -c1-300 >&2
total=$(awk '{ t += $1 } END { print t + 0 }' "$WORK/t.txt")
check "every thread counted ($total of $nthreads)" [ "$total" = "$nthreads" ]
for g in park_nanosleep:2 park_cond:3 park_read:4 park_epoll:5 park_select:6 park_poll:7 park_sem:8; do
	f=${g%:*}
	want=${g#*:}
	got=$(awk -v f="$f" '$0 ~ ";" f "(;|$)" { t += $1 } END { print t + 0 }' "$WORK/t.txt")
	check "$f: $want threads (got $got)" [ "$got" = "$want" ]
done
rec=$(sed -n 's/.* \([0-9]*\) completed by frame-pointer recovery.*/\1/p' "$WORK/t.stats")
check "--stats counts the stacks completed by recovery (${rec:-none})" [ "${rec:-0}" -gt 0 ]

"$ATTACH" -p "$tp" -t wall -d 2s -o "$WORK/w.pb.gz" -q || fail "wall capture failed"
stacks "$WORK/w.pb.gz" >"$WORK/w.txt"
# A running thread that would not stop in time (a loaded machine) is an
# honest "[not captured: ...]" sample, not an incomplete stack.
# A thread whose first stop found it asleep (the flapper) is a sample of
# its sleep: repeated with no stack to repeat, it came out stackless.
bad=$(grep -vE '^[0-9]+ (clone3;start_thread;group_main;|_start;__libc_start_main;__libc_start_call_main;main;|\[not captured: running, did not stop in time\]$)' "$WORK/w.txt")
check "every wall sample's stack reaches its thread's start" [ -z "$bad" ]
[ -n "$bad" ] && echo "$bad" | cut -c1-300 >&2

check "target never left stopped" not_stopped "$tp"
check "no disturbance reached the target ($(last_tick "$WORK/parking-fp.out"))" \
	[ "$(last_tick "$WORK/parking-fp.out" | awk '{ print $2 }')" = 0 ]
finish
