#!/usr/bin/env bash
# sampler: both
# Stacks are complete for -O2 code without frame pointers: through libc (a
# qsort comparator), through a signal handler frame, 100 frames of
# recursion, and on the main thread, each from the leaf to the thread's
# start routine (clone3, start_thread) or to _start. STACKS_TARGET names
# another build of the same program (t_stacks_static.sh: static ones, where
# libc's clone3 and qsort_r are __clone3 and __qsort_r), STACKS_DURATION
# a longer capture (the signal handler is sampled a few times a second).
# At 250 Hz: the perf sampler takes samples in proportion to the CPU the
# target gets, and with six busy threads on a loaded 2-CPU machine the
# qsorter got 13 samples in 8 s at 100 Hz (the ptrace sampler takes one a
# tick from every thread whose clock moved).
. "$(dirname "$0")/lib.sh"

start_target "${STACKS_TARGET:-stacks}"
# The user stacks' completeness: kernel frames (as root, a tick in an
# interrupt's exit puts some below deep_bottom) are t_kframes' business.
"$ATTACH" -p "$TPID" -d "${STACKS_DURATION:-4s}" -F 250 --no-kernel -o "$WORK/stacks.pb.gz" -q ||
	fail "cprof-attach failed"
# One line per sample: "COUNT STACK", the stack root first, ';'-separated.
# burn() is inlined into its callers: a -g build (stacks-debugframe) shows
# it as a frame of its own (at the leaf, and where a signal interrupted
# it), which these checks leave out.
"$PBDUMP" "$WORK/stacks.pb.gz" |
	awk '/^sample / { split($2, v, ","); s = $0; sub(/.* stack /, "", s); gsub(/;burn;/, ";", s); sub(/;burn$/, "", s); print v[1], s }' \
	>"$WORK/stacks.txt"

# count PATTERN: samples whose stack matches an extended regexp.
count() {
	awk -v re="$1" '{ n = $1; s = $0; sub(/^[0-9]+ /, "", s); if (s ~ re) t += n } END { print t + 0 }' "$WORK/stacks.txt"
}

# incomplete LEAF-RE OK-RE: print the stacks that end in LEAF-RE but do not
# match OK-RE, so a failure shows the last frame reached and, in the
# [partial: CAUSE] root, why the walk stopped there.
incomplete() {
	awk -v leaf="$1" -v ok="$2" '{ s = $0; sub(/^[0-9]+ /, "", s); if (s ~ leaf && s !~ ok) print }' \
		"$WORK/stacks.txt" | cut -c1-300 >&2
}

n=$(count ';cmp_slow$')
ok=$(count '^(__)?clone3;start_thread;qsorter_main;qsort_worker;(__)?qsort(_r)?(;[^;]+)*;cmp_slow$')
echo "qsort comparator: $ok of $n stacks complete"
check "qsort comparator sampled" [ "$n" -ge 20 ]
check "every comparator stack goes through qsort to clone3" [ "$ok" = "$n" ] ||
	incomplete ';cmp_slow$' '^(__)?clone3;start_thread;qsorter_main;qsort_worker;(__)?qsort(_r)?(;[^;]+)*;cmp_slow$'

n=$(count ';handler_spin$')
ok=$(count '^(__)?clone3;start_thread;signaller_main;signal_victim;\\[signal handler called\\];(on_usr1;)?handler_spin$')
echo "signal handler: $ok of $n stacks complete"
check "signal handler sampled" [ "$n" -ge 5 ] ||
	{ echo "the signaller's samples:"; grep 'signal_victim' "$WORK/stacks.txt" | cut -c1-200 | sort | uniq -c | sort -rn | head -5; grep SigQ "/proc/$TPID/status"; } >&2
check "every handler stack crosses the signal frame to clone3" [ "$ok" = "$n" ] ||
	incomplete ';handler_spin$' '^(__)?clone3;start_thread;signaller_main;signal_victim;\\[signal handler called\\];(on_usr1;)?handler_spin$'

n=$(count ';recurse_bottom$')
ok=$(sed 's/^\([0-9]*\) /\1;/' "$WORK/stacks.txt" | awk -F';' '$NF == "recurse_bottom" && $2 ~ /^(__)?clone3$/ &&
	$3 == "start_thread" && $4 == "recurser_main" {
	r = 0; for (i = 5; i < NF; i++) if ($i == "recurse") r++; if (r == 100 && NF == 105) ok += $1 }
	END { print ok + 0 }')
echo "recursion: $ok of $n stacks with exactly 100 recurse frames"
check "recursion sampled" [ "$n" -ge 5 ]
check "every recursion stack has all 100 frames down to clone3" [ "$ok" = "$n" ]

n=$(count ';main_spin$')
ok=$(count '^_start;__libc_start_main;__libc_start_call_main;main;main_spin$')
echo "main thread: $ok of $n stacks complete"
check "main thread sampled" [ "$n" -ge 5 ]
check "every main-thread stack reaches _start" [ "$ok" = "$n" ] ||
	incomplete ';main_spin$' '^_start;__libc_start_main;__libc_start_call_main;main;main_spin$'

# 700 frames of recursion: cut at the 512-frame limit and marked so.
n=$(count ';deep_bottom$')
ok=$(sed 's/^\([0-9]*\) /\1;/' "$WORK/stacks.txt" | awk -F';' '$NF == "deep_bottom" && $2 == "[truncated]" && NF == 514 { ok += $1 } END { print ok + 0 }')
echo "700-deep recursion: $ok of $n stacks cut at 512 frames under a [truncated] root"
check "deep recursion sampled" [ "$n" -ge 5 ]
check "every 700-deep stack is cut at 512 frames and marked [truncated]" [ "$ok" = "$n" ]
# (The deep thread is also sampled between visits to deep_bottom, in deep.)
others=$(grep -E '^[0-9]+ \[(partial[^]]*|truncated)\]' "$WORK/stacks.txt" | grep -vE ';deep(_bottom)?$')
check "no other stack is partial or truncated" [ -z "$others" ]
[ -n "$others" ] && echo "$others" | cut -c1-300 >&2
finish
