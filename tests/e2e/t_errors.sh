#!/usr/bin/env bash
# Bad input gets one clear line on stderr and a documented exit code, and
# never a stopped target: usage errors (2), targets that cannot be attached
# (3), unwritable output (6, found before the target is touched).
. "$(dirname "$0")/lib.sh"

# expect CODE PATTERN ARGS...: cprof-attach ARGS exits CODE and prints one
# stderr line matching PATTERN.
expect() {
	local code=$1 pat=$2 rc lines
	shift 2
	"$ATTACH" "$@" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	lines=$(wc -l <"$WORK/err")
	if [ "$rc" = "$code" ] && [ "$lines" = 1 ] && grep -qE "$pat" "$WORK/err"; then
		pass "$* -> $code: $(cat "$WORK/err")"
	else
		fail "$* -> exit $rc (want $code), stderr: $(cat "$WORK/err")"
	fi
}

start_target ticker
tp=$TPID

expect 2 'invalid duration "30x": .*seconds or with a unit' -p "$tp" -d 30x
expect 2 'invalid duration "1m30"' -p "$tp" -d 1m30
expect 2 'invalid duration "abc"' -p "$tp" -d abc
expect 2 'invalid duration "-5s"' -p "$tp" -d -5s
expect 2 'invalid duration "0s"' -p "$tp" -d 0s
expect 2 'invalid frequency "0"' -p "$tp" -F 0
expect 2 'invalid frequency "fast"' -p "$tp" -F fast
expect 2 'invalid frequency "100000"' -p "$tp" -F 100000
expect 2 'unknown profile type "bogus"' -p "$tp" -t bogus
expect 2 'no target: .*-p PID' -d 1s
expect 2 'invalid pid "abc"' -p abc
expect 2 'unexpected argument "extra"' -p "$tp" extra
expect 2 'unknown option "--bogus" \(see --help\)' -p "$tp" --bogus
# A near miss is named (within two edits of an option's name).
expect 2 'unknown option "--frequncy" \(did you mean --frequency\?' -p "$tp" --frequncy 99
expect 2 'option "--count" needs a value' -p "$tp" --every 2s --count
expect 2 'needs a value' -p
expect 3 'cannot attach to 2147483000: no such process' -p 2147483000 -d 1s
# A kernel thread has nothing in user space (pid 2 outside a pid namespace).
kt=$(grep -l '^Kthread:[[:space:]]*1' /proc/[0-9]*/status 2>/dev/null | head -1 | cut -d/ -f3)
if [ -n "$kt" ]; then
	expect 3 "cannot attach to $kt .*a kernel thread" -p "$kt" -d 1s
else
	echo "no kernel thread visible here (a pid namespace, or a kernel before 6.0): not checked"
fi
# A binary profile is not written to a terminal (script(1) gives it one).
if command -v script >/dev/null; then
	script -qec "'$ATTACH' -p $tp -d 1s -o -; echo rc=\$?" /dev/null >"$WORK/tty.out" 2>&1
	check "-o - on a terminal: refused, exit 2 ($(tr -d '\r' <"$WORK/tty.out" | tr '\n' ' '))" \
		sh -c "grep -q 'not writing a gzip-compressed profile to a terminal' '$WORK/tty.out' && grep -q 'rc=2' '$WORK/tty.out'"
fi
# A bare number of seconds, as sleep and timeout read it.
"$ATTACH" -p "$tp" -d 1 -o "$WORK/bare.pb.gz" -q --summary json >"$WORK/bare.json" 2>"$WORK/bare.err"
# The unit is what is checked (a millisecond or a minute is far off): the
# window ends after its last drain, which a loaded machine delays.
check "-d 1 is one second (exit $?, $(grep -o '"duration_s":[0-9.]*' "$WORK/bare.json"))" \
	grep -qE '"duration_s":(0\.9[5-9]|1\.[0-9])' "$WORK/bare.json"
expect 6 'cannot write .*/nonexistent/dir' -p "$tp" -d 1s -o /nonexistent/dir/p.pb.gz

# Its own pid: exec keeps the shell's pid.
bash -c 'exec "$0" -p $$ -d 1s -o /dev/null' "$ATTACH" 2>"$WORK/err"
rc=$?
check "own pid refused with exit 3 ($(cat "$WORK/err"))" \
	sh -c "[ $rc = 3 ] && grep -q 'that is cprof-attach itself' '$WORK/err'"

# A zombie: a child its parent never reaps.
start_target zombie
zp=$(awk '/^ready/ { print $2 }' "$WORK/zombie.out")
expect 3 "cannot attach to $zp \\(zombie\\): the process is a zombie" -p "$zp" -d 1s

# Already traced: name the tracer.
if command -v strace >/dev/null; then
	strace -p "$tp" -o /dev/null 2>/dev/null &
	spid=$!
	PIDS="$PIDS $spid"
	for i in $(seq 1 100); do
		[ "$(awk '/^TracerPid:/ { print $2 }' /proc/"$tp"/status)" != 0 ] && break
		sleep 0.05
	done
	expect 3 "cannot attach to $tp \\(ticker\\): already traced by pid $spid \\(strace\\)" -p "$tp" -d 1s
	kill "$spid"
	wait "$spid" 2>/dev/null
	for i in $(seq 1 100); do
		[ "$(awk '/^TracerPid:/ { print $2 }' /proc/"$tp"/status)" = 0 ] && break
		sleep 0.05
	done
else
	echo "skip: strace not installed"
fi

# Not permitted: another user's process (needs root to set that up).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$ATTACH" -p "$tp" -d 1s -o /tmp/cprof-np.pb.gz \
		2>"$WORK/err"
	rc=$?
	check "another user's process refused with exit 3, naming its owner ($(cat "$WORK/err"))" \
		sh -c "[ $rc = 3 ] && grep -q 'not permitted: it belongs to uid 0' '$WORK/err'"
	# Root without CAP_SYS_PTRACE: the target holds capabilities it lacks (no Yama blamed).
	setpriv --bounding-set=-sys_ptrace --inh-caps=-sys_ptrace "$ATTACH" -p "$tp" -d 1s \
		--sampler ptrace -o "$WORK/np.pb.gz" 2>"$WORK/err"
	rc=$?
	check "root without CAP_SYS_PTRACE: the capabilities named ($(cat "$WORK/err"))" \
		sh -c "[ $rc = 3 ] && grep -q 'holds capabilities cprof-attach lacks' '$WORK/err'"
else
	echo "skip: not root, cannot test another user's process"
fi

"$ATTACH" --help >"$WORK/help"
check "--help exits 0 and documents the exit codes" grep -q "5  partial" "$WORK/help"
check "--help documents every option" sh -c "for o in --pid --type --duration --frequency --output --stack-size --stats --quiet; do grep -q -- \"\$o\" '$WORK/help' || exit 1; done"
check "target never left stopped" not_stopped "$tp"
finish
