#!/usr/bin/env bash
# A thread caught on a static binary's .plt stub for an ifunc (strlen):
# the stub has no CFI, but it is entered by a call and touches only the
# pc, so its caller is the word at sp, checked to follow a call to it.
# Every stack of a 1000 Hz CPU profile is complete, and some of them end
# in the stub (a leaf below strlen_loop with no name: .plt has no symbols).
. "$(dirname "$0")/lib.sh"

for t in pltspin-static pltspin-static-pie; do
	start_target "$t"
	"$ATTACH" -p "$TPID" -d 3s -F 1000 -o "$WORK/$t.pb.gz" -q
	check "$t: capture exits 0" [ $? = 0 ]
	"$PBDUMP" "$WORK/$t.pb.gz" | awk '/^sample / { s = $0; sub(/.* stack /, "", s); print s }' | sort | uniq -c >"$WORK/$t.txt"
	cat "$WORK/$t.txt"
	check "$t: no stack is partial" sh -c "! grep -q 'partial' '$WORK/$t.txt'"
	# (A preempted thread's switches have a frame of their own: not a stack.)
	check "$t: every stack reaches _start through strlen_loop" \
		awk '{ s = $0; sub(/^ *[0-9]+ /, "", s); if (s ~ /^\[kernel: switching/) next
			if (s !~ /^_start;.*;main;strlen_loop(;|$)/) bad++; n++ } END { exit !(n > 0 && !bad) }' "$WORK/$t.txt"
	kill "$TPID"
done
finish
