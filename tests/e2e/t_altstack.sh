#!/usr/bin/env bash
# sampler: both
# Stacks of signal handlers that run on an alternate signal stack
# (sigaltstack + SA_ONSTACK) are complete: from the handler's leaf on the
# alternate stack, through the kernel's signal frame, into the interrupted
# function on the thread's own stack and down to clone3. Busy handlers (a
# mmap'd and a malloc'd alternate stack) in a CPU profile: with ptrace the
# threads are stopped; with perf the kernel copied the alternate stack
# alone and the interrupted one is read from memory after the fact
# (attach/perf/altstack.h), including for a thread sampled at the
# sigreturn trampoline, its frame's first word popped. A handler asleep in
# nanosleep (read without a stop) in a wall profile. The CPU capture is at
# 400 Hz: perf samples CPU time, and on a loaded machine these threads got
# 13 handler samples in 4 s at 100 Hz. The handler spins 2 ms of its
# thread's CPU at each 4 ms tick (half its time, on any machine): beside
# a loaded make check and 4 busy loops, 214-696 handler samples a thread.
. "$(dirname "$0")/lib.sh"

start_target altstack

# stacks FILE: one line per sample, "COUNT STACK", root first, ';'-separated.
stacks() {
	"$PBDUMP" "$1" | awk '/^sample / { split($2, v, ","); s = $0; sub(/.* stack /, "", s); print v[1], s }'
}

# count FILE PATTERN: samples whose stack matches an extended regexp.
count() {
	awk -v re="$2" '{ n = $1; s = $0; sub(/^[0-9]+ /, "", s); if (s ~ re) t += n } END { print t + 0 }' "$1"
}

# incomplete FILE LEAF-RE OK-RE: the stacks with LEAF-RE that do not match
# OK-RE, so that a failure shows the frame where the walk stopped and, in
# the [partial: CAUSE] root, why.
incomplete() {
	awk -v leaf="$2" -v ok="$3" '{ s = $0; sub(/^[0-9]+ /, "", s); if (s ~ leaf && s !~ ok) print }' \
		"$1" | cut -c1-300 >&2
}

SIG='alt_outer;alt_middle;alt_victim;\\[signal handler called\\];'

"$ATTACH" -p "$TPID" -d 4s -F 400 -o "$WORK/cpu.pb.gz" -q --stats 2>"$WORK/cpu.stats" ||
	{ cat "$WORK/cpu.stats" >&2; fail "cprof-attach (cpu) failed"; }
stacks "$WORK/cpu.pb.gz" >"$WORK/cpu.txt"
for t in altmmap altheap; do
	n=$(count "$WORK/cpu.txt" "${t}_main;.*;alt_handler_spin\$")
	ok=$(count "$WORK/cpu.txt" "^clone3;start_thread;${t}_main;${SIG}(on_prof;)?alt_handler_spin\$")
	echo "$t: $ok of $n handler stacks complete"
	check "$t: handler on its alternate stack sampled" [ "$n" -ge 20 ]
	check "$t: every handler stack crosses to the interrupted alt_victim and clone3" [ "$ok" = "$n" ] ||
		incomplete "$WORK/cpu.txt" 'alt_handler_spin$' "^clone3;start_thread;${t}_main;${SIG}(on_prof;)?alt_handler_spin\$"
done
partial=$(grep -cE '^[0-9]+ \[(partial|truncated)' "$WORK/cpu.txt")
check "no cpu stack is partial" [ "$partial" = 0 ] || grep -E '^[0-9]+ \[' "$WORK/cpu.txt" | cut -c1-300 >&2
check "--stats counts the samples on an alternate stack" grep -qE '[1-9][0-9]* samples on an alternate signal stack' "$WORK/cpu.stats"

"$ATTACH" -p "$TPID" -t wall -d 2s -o "$WORK/wall.pb.gz" -q || fail "cprof-attach (wall) failed"
stacks "$WORK/wall.pb.gz" >"$WORK/wall.txt"
n=$(count "$WORK/wall.txt" 'alt_handler_sleep')
# Complete is what counts: a wall tick may also catch the handler running on
# its way into or out of nanosleep (seen once in a fresh-clone run).
ok=$(count "$WORK/wall.txt" "^clone3;start_thread;altsleep_main;${SIG}(on_usr2;)?alt_handler_sleep(;[^;]+)*\$")
echo "altsleep: $ok of $n sleeping-handler stacks complete"
check "altsleep: handler asleep on its alternate stack sampled" [ "$n" -ge 20 ]
check "altsleep: every sleeping-handler stack crosses to clone3" [ "$ok" = "$n" ] ||
	incomplete "$WORK/wall.txt" 'alt_handler_sleep' "^clone3;start_thread;altsleep_main;${SIG}(on_usr2;)?alt_handler_sleep;"
partial=$(grep -cE '^[0-9]+ \[(partial|truncated)' "$WORK/wall.txt")
check "no wall stack is partial" [ "$partial" = 0 ] || grep -E '^[0-9]+ \[' "$WORK/wall.txt" | cut -c1-300 >&2
finish
