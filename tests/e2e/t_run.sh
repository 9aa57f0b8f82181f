#!/usr/bin/env bash
# `cprof-attach run -- CMD` (issue 29): CMD starts with libcprof.so
# preloaded, its profiles are written, its exit status is passed on.
#  a. a program that exits by itself (return 7 from main): run -t
#     heap,allocs reads its segment at the exit handshake; keep_site's
#     in-use bytes match the 4 MiB it kept, churn_site's 16 MiB is
#     allocated and not in use; the status is 7.
#  b. a long-running program, run stopped by SIGINT: the heap is read,
#     then SIGINT passed on; CMD dies of it (130) or, handling it, returns
#     9 from main; no file is half-written.
#  c. -t cpu,heap: two files, p.cpu.pb.gz and p.heap.pb.gz.
#  d. a CMD that does not exist: one line, exit 127.
#  e. -d 1s: the profiles are written while CMD runs on; run waits for
#     it and passes its status on (143, SIGTERM).
#  f. cprof-attach killed (SIGKILL): CMD is not held at its exit.
#  g. -t cpu,heap on a CMD that ends by itself (its SIGINT handler returns
#     9 from main): both files, the heap read at the exit handshake.
#  h. run --help: its usage, without -p.
#  i. a CMD killed by a signal (no handshake): its status, and one line
#     saying why there is no heap profile.
#  j. Ctrl-C as a terminal sends it, to the process group of both run and
#     CMD (CMD's default SIGINT action runs the handshake first): both
#     files, exit 130.
#  k. that handler is not seen: sigaction reports the default action (a
#     program that installs its own only over the default still does).
# Tolerance: CPROF_SAMPLE_RATE=4096 and 16 KiB blocks, so each block is
# sampled with p = 1 - e^-4 = 0.982 and counted as 16 KiB / p; for
# keep_site's 256 blocks the estimate's standard deviation is
# 16 KiB * sqrt(256 (1 - p) / p) = 0.85% of 4 MiB, for churn_site's 1024
# blocks 0.42% of 16 MiB: 5% is more than 5 standard deviations. A freed
# sampled block leaves in-use exactly, so churn's in-use is 0.
. "$(dirname "$0")/lib.sh"

RUNEXIT=$TARGETS/runexit
KEPT=4194304

# value INDEX FUNCTION FILE: sum of sample value INDEX over stacks whose leaf is FUNCTION.
value() {
	awk -v i="$1" -v f="$2" '/^sample / { split($2, v, ","); s = $0; sub(/.* stack /, "", s); n = split(s, fr, ";"); if (fr[n] == f) t += v[i] } END { print t + 0 }' "$3"
}

# wait_file FILE...: until each exists (at most 20 s); 1 if one never came.
wait_file() {
	local i f missing
	for i in $(seq 1 400); do
		missing=0
		for f in "$@"; do [ -e "$f" ] || missing=1; done
		[ "$missing" = 0 ] && return 0
		sleep 0.05
	done
	return 1
}

# ended PID: the process is gone, or a zombie (an orphan's reaper may be slow).
ended() {
	! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' /proc/"$1"/status 2>/dev/null
}

# only_files DIR NAME...: DIR holds exactly these files (no temporary left).
only_files() {
	local dir=$1
	shift
	[ "$(ls -A "$dir" | sort | tr '\n' ' ')" = "$(printf '%s\n' "$@" | sort | tr '\n' ' ')" ]
}

# start_run DIR ARGS...: cprof-attach run ARGS in the background, in a
# process group of its own (job control on), with SIGINT, SIGTERM and
# SIGHUP at their default actions: a script's background job inherits an
# ignored SIGINT, and so does everything under a harness started in the
# background (CI's fresh clone under nohup ... &: there CMD ignored the
# SIGINT passed on, and run exited 8 after its 5 s grace). Sets APID;
# stderr to DIR/err.
start_run() {
	local dir=$1
	shift
	set -m
	CPROF_SAMPLE_RATE=4096 env --default-signal=INT,TERM,HUP "$ATTACH" run "$@" 2>"$dir/err" &
	APID=$!
	set +m
	PIDS="$PIDS $APID"
}

# cmd_of PID: the runexit started by cprof-attach PID (added for cleanup).
cmd_of() {
	local c
	c=$(pgrep -P "$1" -x runexit | head -1)
	PIDS="$PIDS $c"
	echo "$c"
}

# a. An exit by itself.
mkdir -p "$WORK/a"
CPROF_SAMPLE_RATE=4096 "$ATTACH" run -t heap,allocs -o "$WORK/a/p.pb.gz" -- "$RUNEXIT" exit \
	2>"$WORK/a.err"
rc=$?
check "a: CMD's exit status is passed on (7: $rc)" [ "$rc" = 7 ]
check "a: one file per type, nothing else" only_files "$WORK/a" p.heap.pb.gz p.allocs.pb.gz
"$PBDUMP" "$WORK/a/p.heap.pb.gz" >"$WORK/a.heap" 2>/dev/null
"$PBDUMP" "$WORK/a/p.allocs.pb.gz" >"$WORK/a.allocs" 2>/dev/null
got=$(value 4 keep_site "$WORK/a.heap")
check "a: keep_site in use at the exit: $got bytes, truth $KEPT (within 5%)" \
	near "$got" "$KEPT" "$((KEPT / 20))"
check "a: heap's default is inuse_space" grep -q '^default_sample_type inuse_space' "$WORK/a.heap"
got=$(value 4 churn_site "$WORK/a.allocs")
check "a: churn_site has nothing in use ($got bytes)" [ "$got" = 0 ]
got=$(value 2 churn_site "$WORK/a.allocs")
check "a: churn_site allocated $got bytes, truth 16777216 (within 5%)" near "$got" 16777216 838861
check "a: allocs's default is alloc_space" grep -q '^default_sample_type alloc_space' "$WORK/a.allocs"

# b. Stopped by SIGINT (as Ctrl-C would be): CMD dies of the SIGINT passed on.
mkdir -p "$WORK/b"
start_run "$WORK" -t heap -o "$WORK/b/h.pb.gz" -- "$RUNEXIT" loop "$WORK/b.ready"
check "b: CMD started" wait_file "$WORK/b.ready"
cpid=$(cmd_of "$APID")
kill -INT "$APID"
wait "$APID"
rc=$?
check "b: exit 130, CMD's death by SIGINT passed on ($rc): $(tr '\n' ' ' <"$WORK/err")" [ "$rc" = 130 ]
check "b: CMD is gone" ended "$cpid"
check "b: the heap profile and nothing else (no temporary)" only_files "$WORK/b" h.pb.gz
"$PBDUMP" "$WORK/b/h.pb.gz" >"$WORK/b.heap" 2>/dev/null
got=$(value 4 keep_site "$WORK/b.heap")
check "b: keep_site in use: $got bytes, truth $KEPT (within 5%)" near "$got" "$KEPT" "$((KEPT / 20))"
# CMD that handles SIGINT and returns 9: its exit status, and the heap read before.
rm -rf "$WORK/b" "$WORK/b.ready" && mkdir -p "$WORK/b"
start_run "$WORK" -t heap -o "$WORK/b/h.pb.gz" -- "$RUNEXIT" handle "$WORK/b.ready"
check "b: CMD (handling SIGINT) started" wait_file "$WORK/b.ready"
cmd_of "$APID" >/dev/null
kill -INT "$APID"
wait "$APID"
rc=$?
check "b: CMD handled the SIGINT and returned 9, passed on ($rc)" [ "$rc" = 9 ]
check "b: its heap profile is written" sh -c "'$PBDUMP' '$WORK/b/h.pb.gz' | grep -q keep_site"

# c. Two types at once: cpu by its own record, heap from the segment.
mkdir -p "$WORK/c"
start_run "$WORK" -t cpu,heap -o "$WORK/c/p.pb.gz" -- "$RUNEXIT" loop "$WORK/c.ready"
check "c: CMD started" wait_file "$WORK/c.ready"
cmd_of "$APID" >/dev/null
# The cpu record says its capture line once it samples: stop after it.
for i in $(seq 1 400); do grep -q 'profiling .*: cpu' "$WORK/err" && break; sleep 0.05; done
kill -INT "$APID"
wait "$APID"
rc=$?
check "c: exit 130 ($rc)" [ "$rc" = 130 ]
check "c: p.cpu.pb.gz and p.heap.pb.gz, nothing else" only_files "$WORK/c" p.cpu.pb.gz p.heap.pb.gz
check "c: the cpu file is a cpu profile" sh -c "'$PBDUMP' '$WORK/c/p.cpu.pb.gz' | grep -q '^sample_type cpu nanoseconds'"
"$PBDUMP" "$WORK/c/p.heap.pb.gz" >"$WORK/c.heap" 2>/dev/null
got=$(value 4 keep_site "$WORK/c.heap")
check "c: the heap file's keep_site: $got bytes, truth $KEPT (within 5%)" near "$got" "$KEPT" "$((KEPT / 20))"

# d. No such command.
"$ATTACH" run -t heap -- "$WORK/no-such-program" arg >"$WORK/d.out" 2>"$WORK/d.err"
rc=$?
check "d: exit 127 for a CMD not found ($rc)" [ "$rc" = 127 ]
check "d: one line naming it: $(cat "$WORK/d.err")" \
	sh -c "[ \$(wc -l <'$WORK/d.err') = 1 ] && grep -q 'cannot run \"$WORK/no-such-program\": No such file' '$WORK/d.err'"
printf 'not a program\n' >"$WORK/notexec" && chmod 644 "$WORK/notexec"
"$ATTACH" run -t heap -- "$WORK/notexec" 2>"$WORK/d2.err"
rc=$?
check "d: exit 126 for a CMD that cannot be executed ($rc)" [ "$rc" = 126 ]

# e. -d 1s: the profiles while CMD runs; then run waits for CMD.
mkdir -p "$WORK/e"
start_run "$WORK" -d 1s -t cpu,heap -o "$WORK/e/p.pb.gz" -- "$RUNEXIT" loop "$WORK/e.ready"
check "e: CMD started" wait_file "$WORK/e.ready"
cpid=$(cmd_of "$APID")
check "e: both profiles written after the window" wait_file "$WORK/e/p.cpu.pb.gz" "$WORK/e/p.heap.pb.gz"
check "e: run still waits for CMD, which runs on" sh -c "kill -0 $APID && kill -0 $cpid"
check "e: the heap file has keep_site" sh -c "'$PBDUMP' '$WORK/e/p.heap.pb.gz' | grep -q keep_site"
kill -TERM "$cpid"
wait "$APID"
rc=$?
check "e: CMD's death by SIGTERM passed on (143: $rc)" [ "$rc" = 143 ]

# f. cprof-attach killed: CMD's exit is not held (end of file on the socket).
start_run "$WORK" -t heap -o "$WORK/f.pb.gz" -- "$RUNEXIT" handle "$WORK/f.ready"
check "f: CMD started" wait_file "$WORK/f.ready"
cpid=$(cmd_of "$APID")
{
	kill -KILL "$APID"
	wait "$APID"
} 2>/dev/null
kill -INT "$cpid"
# It would wait 10 s at most for a cprof-attach alive; dead, not at all.
for i in $(seq 1 100); do ended "$cpid" && break; sleep 0.05; done
check "f: CMD ended (within 5 s, its wait being 10 s) with cprof-attach gone" ended "$cpid"
check "f: no profile, no temporary" sh -c "! ls '$WORK' | grep -q '^f\\.pb'"

# g. cpu and heap of a CMD that ends by itself.
mkdir -p "$WORK/g"
start_run "$WORK" -t cpu,heap -o "$WORK/g/p.pb.gz" -- "$RUNEXIT" handle "$WORK/g.ready"
check "g: CMD started" wait_file "$WORK/g.ready"
cpid=$(cmd_of "$APID")
for i in $(seq 1 400); do grep -q 'profiling .*: cpu' "$WORK/err" && break; sleep 0.05; done
kill -INT "$cpid"
wait "$APID"
rc=$?
check "g: CMD's own exit status (9: $rc): $(tr '\n' ' ' <"$WORK/err")" [ "$rc" = 9 ]
check "g: p.cpu.pb.gz and p.heap.pb.gz, nothing else" only_files "$WORK/g" p.cpu.pb.gz p.heap.pb.gz
"$PBDUMP" "$WORK/g/p.heap.pb.gz" >"$WORK/g.heap" 2>/dev/null
got=$(value 4 keep_site "$WORK/g.heap")
check "g: keep_site at the exit: $got bytes, truth $KEPT (within 5%)" near "$got" "$KEPT" "$((KEPT / 20))"
# finish() is CPU time after the capture began (its line was out): samples, at any load.
check "g: the cpu profile has finish()" sh -c "'$PBDUMP' '$WORK/g/p.cpu.pb.gz' | grep -q '^sample .*;finish\$'"

# h. Its --help.
"$ATTACH" run --help >"$WORK/h.txt"
check "h: run --help: its usage line, and no -p" \
	sh -c "grep -q '^usage: cprof-attach run ' '$WORK/h.txt' && ! grep -qE '^ +-p, --pid' '$WORK/h.txt'"

# i. No handshake: SIGKILL runs no destructor.
mkdir -p "$WORK/i"
"$ATTACH" run -t heap -o "$WORK/i/h.pb.gz" -- sh -c 'kill -9 $$' 2>"$WORK/i.err"
rc=$?
check "i: CMD's death by SIGKILL passed on (137: $rc)" [ "$rc" = 137 ]
check "i: one line says why no heap profile: $(cat "$WORK/i.err")" \
	sh -c "[ \$(wc -l <'$WORK/i.err') = 1 ] && grep -q 'no heap profile: .*signal 9' '$WORK/i.err'"
check "i: no file" [ -z "$(ls -A "$WORK/i")" ]

# j. SIGINT to the whole process group, as a terminal's Ctrl-C: CMD and run get it at once.
mkdir -p "$WORK/j"
start_run "$WORK" -t cpu,heap -o "$WORK/j/p.pb.gz" -- "$RUNEXIT" loop "$WORK/j.ready"
check "j: CMD started" wait_file "$WORK/j.ready"
cpid=$(cmd_of "$APID")
check "j: CMD is in run's process group" [ "$(ps -o pgid= -p "$cpid" | tr -d ' ')" = "$APID" ]
kill -INT -- "-$APID"
wait "$APID"
rc=$?
check "j: exit 130 ($rc)" [ "$rc" = 130 ]
check "j: p.cpu.pb.gz and p.heap.pb.gz, nothing else: $(tr '\n' ' ' <"$WORK/err")" \
	only_files "$WORK/j" p.cpu.pb.gz p.heap.pb.gz
"$PBDUMP" "$WORK/j/p.heap.pb.gz" >"$WORK/j.heap" 2>/dev/null
got=$(value 4 keep_site "$WORK/j.heap")
check "j: keep_site: $got bytes, truth $KEPT (within 5%)" near "$got" "$KEPT" "$((KEPT / 20))"

# k. The handshake's handler reads as SIG_DFL.
env --default-signal=INT,TERM,HUP "$ATTACH" run -q -t heap -o "$WORK/k.pb.gz" -- "$RUNEXIT" sigdfl
rc=$?
check "k: CMD sees SIGINT, SIGTERM and SIGHUP at their default (exit 0: $rc)" [ "$rc" = 0 ]
finish
