#!/usr/bin/env bash
# The cpu kind's choice of sampler. Where perf events work, auto takes
# them and says so on the capture line, in the profile (a comment) and in
# --summary json. Under a seccomp filter that refuses perf_event_open (as
# a container's default profile does), auto takes ptrace and says why,
# exit 0; --sampler perf is then one line naming the filter, exit 3.
# --stack-size above the kernel's cap is cut with a note; --sampler is
# refused for wall. As an unprivileged user (perf_event_paranoid <= 2),
# perf takes per-thread events on the user's own process.
. "$(dirname "$0")/lib.sh"
NOPERF=$B/tests/tools/noperf

start_target duty
perf_ok=1
"$ATTACH" -p "$TPID" -d 200ms --sampler perf -q -o /dev/null 2>/dev/null || perf_ok=0

if [ "$perf_ok" = 1 ]; then
	"$ATTACH" -p "$TPID" -d 1s -o "$WORK/auto.pb.gz" --summary json >"$WORK/auto.json" 2>"$WORK/auto.err"
	rc=$?
	check "auto: exit 0 (got $rc)" [ "$rc" = 0 ]
	check "auto: the capture line names perf and why ($(grep profiling "$WORK/auto.err"))" \
		grep -q 'profiling .*; sampler perf (.*allowed by' "$WORK/auto.err"
	check "auto: the profile says which sampler" sh -c "'$PBDUMP' '$WORK/auto.pb.gz' | grep -q '^comment sampler: perf ('"
	check "auto: --summary json has sampler and sampler_reason" \
		grep -q '"sampler":"perf","sampler_reason":"' "$WORK/auto.json"
	"$ATTACH" -p "$TPID" -d 500ms --sampler perf --stack-size 1M -o "$WORK/big.pb.gz" 2>"$WORK/big.err"
	check "perf: --stack-size 1M is cut to 65528, with a note" \
		grep -q 'more than perf events copy; 65528 bytes' "$WORK/big.err"
else
	echo "perf events refused here: the perf half of this test is skipped"
fi

"$NOPERF" "$ATTACH" -p "$TPID" -d 1s -o "$WORK/noperf.pb.gz" --summary json >"$WORK/noperf.json" 2>"$WORK/noperf.err"
rc=$?
check "seccomp'd: auto falls back to ptrace, exit 0 (got $rc)" [ "$rc" = 0 ]
check "seccomp'd: the capture line says ptrace and names the filter ($(grep profiling "$WORK/noperf.err"))" \
	grep -q 'profiling .*; sampler ptrace (perf_event_open refused .*seccomp' "$WORK/noperf.err"
check "seccomp'd: --summary json says ptrace" grep -q '"sampler":"ptrace","sampler_reason":"perf_event_open refused' "$WORK/noperf.json"
check "seccomp'd: the profile is a CPU profile with samples" \
	sh -c "'$PBDUMP' '$WORK/noperf.pb.gz' | grep -q '^sample '"
"$NOPERF" "$ATTACH" -p "$TPID" -d 1s --sampler perf -o "$WORK/no.pb.gz" 2>"$WORK/no.err"
rc=$?
check "seccomp'd: --sampler perf exits 3 (got $rc)" [ "$rc" = 3 ]
check "seccomp'd: ... with one line naming the filter ($(cat "$WORK/no.err"))" \
	sh -c "[ \$(wc -l <'$WORK/no.err') = 1 ] && grep -q 'cannot sample .* with perf events: .*seccomp' '$WORK/no.err'"
check "seccomp'd: no profile written" [ ! -e "$WORK/no.pb.gz" ]

"$ATTACH" -p "$TPID" -t wall -d 1s --sampler perf -o "$WORK/w.pb.gz" 2>"$WORK/w.err"
rc=$?
check "--sampler with wall: usage error (got $rc: $(cat "$WORK/w.err"))" [ "$rc" = 2 ]

# Per-thread events for an unprivileged user on its own process.
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 9)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ "$paranoid" -le 2 ]; then
	chmod 777 "$WORK"
	rm -f "$WORK/duty.out"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TARGETS/duty" >"$WORK/nobody.out" 2>&1 &
	up=$!
	PIDS="$PIDS $up"
	while ! grep -q ready "$WORK/nobody.out" 2>/dev/null; do sleep 0.05; done
	setpriv --reuid=65534 --regid=65534 --clear-groups "$ATTACH" -p "$up" -d 2s --sampler perf \
		--stats -o "$WORK/task.pb.gz" 2>"$WORK/task.err"
	rc=$?
	check "unprivileged: perf with per-thread events, exit 0 (got $rc: $(grep profiling "$WORK/task.err"))" \
		sh -c "[ $rc = 0 ] && grep -q 'sampler perf (per-thread events' '$WORK/task.err'"
	got=$(pprof_cum "$WORK/task.pb.gz" spin_forever)
	check "unprivileged: the spinner sampled ($got%)" below 40 "$got"
	check "unprivileged: target left running" not_stopped "$up"
else
	echo "not root, no setpriv, or perf_event_paranoid $paranoid > 2: per-thread events not tested"
fi
check "target left running" not_stopped "$TPID"
finish
