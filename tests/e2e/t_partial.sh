#!/usr/bin/env bash
# A stack that cannot be unwound to its thread's start says so, and why,
# instead of ending quietly or guessing: code with no CFI (hand-written
# assembly) ends in "[partial: no unwind info]" right above its one frame,
# code outside every object (a JIT's anonymous mapping) in "[partial: code
# outside every object]", and --stats counts partial stacks by cause. The
# sleeping main thread of the same process stays complete.
. "$(dirname "$0")/lib.sh"

start_target nocfi
"$ATTACH" -p "$TPID" -t wall -d 1s -o "$WORK/w.pb.gz" --stats -q 2>"$WORK/stats" || fail "wall capture failed"
"$PBDUMP" "$WORK/w.pb.gz" | awk '/^sample / { l = $4; sub(/.*thread=/, "", l); sub(/[; ].*/, "", l); s = $0; sub(/.* stack /, "", s); print l, s }' |
	sort | uniq -c >"$WORK/stacks.txt"
cat "$WORK/stacks.txt"

only() { # only THREAD STACK-RE: THREAD has samples, all with stacks matching STACK-RE
	awk -v t="$1" -v re="$2" '$2 == t { n++; s = $0; sub(/^ *[0-9]+ [^ ]+ /, "", s); if (s !~ re) bad++ }
		END { exit !(n > 0 && bad == 0) }' "$WORK/stacks.txt"
}
check "code without CFI: [partial: no unwind info] above its frame" \
	only asmspin '^[[]partial: no unwind info[]];nocfi_spin$'
check "code outside every object: [partial: code outside every object] above its address" \
	only jitspin '^[[]partial: code outside every object[]];0x[0-9a-f]+$'
# By tid: a thread caught in its first instructions, in clone3 before its
# name is set, is also "nocfi" (its first instant: clone3 alone, whole).
# As root, its kernel stack follows (t_kstack): from the system call's entry.
check "the sleeping main thread is complete" \
	awk -v t="tid=$TPID" '/^sample / && ($0 ~ (t "( |;|$)")) { n++; s = $0; sub(/.* stack /, "", s)
		if (s !~ /^_start;__libc_start_main;__libc_start_call_main;main;(__nanosleep;)?clock_nanosleep(;entry_SYSCALL_64[a-z_]*(;[^;]+)*)?$/) bad++ }
		END { exit !(n > 0 && bad == 0) }' <("$PBDUMP" "$WORK/w.pb.gz")
check "--stats counts partial stacks by cause" \
	grep -qE '^cprof-attach: stats: partial stacks by cause: .*code outside every object [0-9]+.*no unwind info [0-9]+|no unwind info [0-9]+.*code outside every object [0-9]+' "$WORK/stats"

# --summary json counts them too, by cause, apart from "partial" (the
# capture's own: the process did not go away).
"$ATTACH" -p "$TPID" -t wall -d 1s -o "$WORK/j.pb.gz" -q --summary json >"$WORK/summary.json" ||
	fail "wall capture with --summary json failed"
cat "$WORK/summary.json"
if command -v python3 >/dev/null; then
	check "--summary json: partial_stacks by cause, summing to the total, and the capture not partial" \
		python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
by = o["partial_by_cause"]
assert o["partial"] is False, o
assert o["stacks"] >= o["partial_stacks"] > 0, o
assert by.get("no unwind info", 0) > 0 and by.get("code outside every object", 0) > 0, o
assert sum(by.values()) == o["partial_stacks"], o
assert o["truncated"] == 0, o
' "$WORK/summary.json"
else
	fail "python3 is needed to check the JSON summary"
fi
check "target never left stopped" not_stopped "$TPID"
finish
