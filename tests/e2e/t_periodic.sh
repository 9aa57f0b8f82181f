#!/usr/bin/env bash
# Scripted and periodic use: --every/--count produce separately named
# files from the name template, each a valid profile, and no partial file
# is ever visible under a final name; --summary json prints one valid JSON
# line per capture; -q prints nothing but errors; --top prints the top
# functions; exit codes for success, usage, attach, gone and partial.
. "$(dirname "$0")/lib.sh"

start_target duty
tp=$TPID
mkdir -p "$WORK/out"

# A watcher checks every file that appears under a final name while the
# series runs: each must already be complete.
(
	while :; do
		for f in "$WORK"/out/cpu-*.pb.gz; do
			[ -e "$f" ] || continue
			grep -qx "$f" "$WORK/checked" 2>/dev/null && continue
			if gzip -t "$f" 2>/dev/null && "$PBDUMP" "$f" >/dev/null 2>&1; then
				echo "$f" >>"$WORK/checked"
			else
				echo "$f" >>"$WORK/broken"
			fi
		done
		sleep 0.01
	done
) &
watcher=$!
PIDS="$PIDS $watcher"
"$ATTACH" -p "$tp" -d 500ms --every 1s --count 3 -o "$WORK/out/cpu-%p-%T-%n.pb.gz" \
	--summary json -q >"$WORK/summary.json" 2>"$WORK/err"
rc=$?
# Give the watcher time to look at the last file (it checks every 10 ms,
# but a loaded machine may hold it back): up to 5 s, until it has seen 3.
for _ in $(seq 1 100); do
	[ "$(cat "$WORK/checked" "$WORK/broken" 2>/dev/null | wc -l)" -ge 3 ] && break
	sleep 0.05
done
kill "$watcher" 2>/dev/null
check "three periodic captures exit 0 (got $rc)" [ "$rc" = 0 ]
check "-q printed nothing on stderr" [ ! -s "$WORK/err" ]
for n in 1 2 3; do
	f="$WORK/out/cpu-$tp-cpu-$n.pb.gz"
	check "capture $n written as $(basename "$f")" [ -s "$f" ]
	check "capture $n is a valid profile" "$PBDUMP" "$f" >/dev/null
done
check "exactly three files, nothing else in the directory" [ "$(ls -A "$WORK/out" | wc -l)" = 3 ]
check "the watcher saw every file whole the first time it appeared" [ ! -e "$WORK/broken" ]
check "the watcher saw all three" [ "$(wc -l <"$WORK/checked")" = 3 ]

# --summary json: one JSON object per line with the documented fields.
if command -v python3 >/dev/null; then
	check "--summary json: three valid JSON lines with the fields" python3 - "$WORK/summary.json" "$tp" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 3, lines
for i, l in enumerate(lines, 1):
    o = json.loads(l)
    for k in ("path", "type", "pid", "capture", "exit", "samples", "lost", "duration_s", "threads", "start_ns", "partial"):
        assert k in o, (k, o)
    assert o["capture"] == i and o["pid"] == int(sys.argv[2]) and o["type"] == "cpu", o
    assert o["exit"] == 0 and o["samples"] > 0 and o["threads"] >= 1 and o["partial"] is False, o
    assert o["path"].endswith("-%d.pb.gz" % i), o
    assert 0.4 < o["duration_s"] < 0.7, o
PY
else
	fail "python3 is needed to check the JSON summary"
fi

# %t names each capture by its start time.
"$ATTACH" -p "$tp" -t threads --every 1100ms --count 2 -o "$WORK/out2-%t.pb.gz" -q
check "%t names captures by UTC time" [ "$(ls "$WORK" | grep -cE '^out2-[0-9]{8}T[0-9]{6}Z\.pb\.gz$')" = 2 ]

# --top prints the top functions on stdout, off a terminal and with -q
# too, for every format; on stderr where stdout has the profile.
"$ATTACH" -p "$tp" -d 500ms -o "$WORK/top.pb.gz" --top >"$WORK/top.out" 2>"$WORK/top.err"
check "--top prints the top table" grep -q 'flat  flat%' "$WORK/top.out"
check "--top lists the hot function" grep -q 'spin_forever' "$WORK/top.out"
"$ATTACH" -p "$tp" -d 300ms -o "$WORK/top.folded" --format folded -q --top=3 >"$WORK/top3.out" 2>&1
n3=$(grep -v 'flat%' "$WORK/top3.out" | grep -c '%')
check "--top=3 -q --format folded: three functions ($n3)" [ "$n3" = 3 ]
"$ATTACH" -p "$tp" -d 300ms -o - --top >"$WORK/topo.pb.gz" 2>"$WORK/topo.err"
check "--top -o -: the table on stderr, the profile alone on stdout" \
	sh -c "grep -q 'flat  flat%' '$WORK/topo.err' && gzip -t '$WORK/topo.pb.gz'"
"$ATTACH" -p "$tp" -d 300ms -o "$WORK/notop.pb.gz" 2>"$WORK/notop.err"
check "no top table when stderr is not a terminal" sh -c "! grep -q 'flat  flat%' '$WORK/notop.err'"

# At a terminal: a live progress line that is erased, then the top functions.
if command -v script >/dev/null; then
	script -qec "'$ATTACH' -p $tp -d 1500ms -o '$WORK/tty.pb.gz'" /dev/null >"$WORK/tty.out" 2>&1
	check "terminal: a progress line (elapsed of total, samples, threads)" \
		grep -qaE 'cprof-attach: [0-9.]+s of 1\.5s, [0-9]+ samples, [0-9]+ threads' "$WORK/tty.out"
	check "terminal: the progress line is erased" grep -qa "$(printf '\r\033\\[K')" "$WORK/tty.out"
	check "terminal: the top functions follow" grep -qa 'spin_forever' "$WORK/tty.out"
else
	fail "script (util-linux) is needed to test terminal output"
fi

# Exit codes.
"$ATTACH" -p "$tp" --every 1s -o "$WORK/fixed.pb.gz" 2>/dev/null
check "usage (2): --every with a fixed name" [ $? = 2 ]
"$ATTACH" -p "$tp" --count 3 2>/dev/null
check "usage (2): --count without --every" [ $? = 2 ]
"$ATTACH" -p "$tp" -d 2s --every 1s 2>/dev/null
check "usage (2): -d longer than --every" [ $? = 2 ]
"$ATTACH" -p 2147483000 -d 1s 2>/dev/null
check "cannot attach (3)" [ $? = 3 ]
# A process that does nothing and exits: nothing captured (4), or, where
# its exit costs CPU a tick can land in (10 ms on CI's PVM machines: the
# page tables' teardown), that alone (5): with no user registers, past
# the end of its thread (tid -1: "thread exiting"), or, since kernel call
# chains, a whole stack of its end: its wake from the sleep
# (__nanosleep;clock_nanosleep) or its exit (_exit ... do_exit); 3 of 25
# runs beside two busy loops (2026-11-27). It is caught asleep first: its
# start (the loader, in user mode) is work a capture that begins at once
# may sample.
sleep 1 &
gp=$!
for i in $(seq 1 40); do
	[ "$(awk '{ print $3 }' /proc/$gp/stat 2>/dev/null)" = S ] && break
	sleep 0.005
done
"$ATTACH" -p $gp -d 5s -o "$WORK/gone.pb.gz" 2>/dev/null
rc=$?
check "gone before anything was captured (4), or only its exit captured (5) (got $rc)" \
	sh -c "[ $rc = 4 ] || { [ $rc = 5 ] && ! '$PBDUMP' '$WORK/gone.pb.gz' | grep '^sample [0-9]' | grep -qvE 'no user registers|thread exiting|;_exit;|;__nanosleep;clock_nanosleep($|;)'; }"
start_target ticker -t 2
"$ATTACH" -p "$TPID" -d 500ms --every 1s -o "$WORK/out3-%n.pb.gz" --summary json -q >"$WORK/s3.json" 2>/dev/null
rc=$?
check "a series the target ended after writing profiles: partial (5), got $rc" [ "$rc" = 5 ]
check "and its profiles were written" [ -s "$WORK/out3-1.pb.gz" ]
check "success (0)" "$ATTACH" -p "$tp" -t threads -o "$WORK/ok.pb.gz" -q
check "target never left stopped" not_stopped "$tp"
finish
