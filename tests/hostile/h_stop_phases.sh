#!/usr/bin/env bash
# SIGTERM in every phase of cprof-attach, each made long on purpose: it
# ends within 2 s of the signal, with the right exit code, and the output
# is complete or absent, never half-written; the target runs on.
#  (a) sampling (-d 30s): the window ends, the profile is written, exit 0;
#  (b) the source-lines pass, waiting on a debuginfod server that accepts
#      and never answers: the query ends at the signal, the profile is
#      written (lines only from what is at hand), exit 0;
#  (c) a series' sleep between captures (--every 30s): exit 0, the first
#      profile complete, no second;
#  (d) --push retrying a refused server, and --push in a request to a
#      server that never answers: exit 7, the profiles kept in the spool;
#  (e) writing into a pipe nobody reads (-o - | a reader that sleeps): the
#      watchdog ends it, exit 8, one line naming "writing the profile".
source "$(dirname "$0")/lib.sh"

# A server that accepts connections and never answers (debuginfod, push).
mute_server() {
	python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
conns = []
end = time.time() + 300
while time.time() < end:
    s.settimeout(1)
    try:
        conns.append(s.accept()[0])
        open(sys.argv[1], "a").write("conn\n")
    except OSError: pass
' "$WORK/mute.conns" >"$WORK/mute.port" &
	PIDS="$PIDS $!"
	for i in $(seq 1 50); do [ -s "$WORK/mute.port" ] && break; sleep 0.1; done
	MUTE=$(cat "$WORK/mute.port")
}
mute_server

conns() { cat "$WORK/mute.conns" 2>/dev/null | wc -l; }

# complete NAME FILE: FILE is a whole profile (pbdump reads it to the end).
complete() {
	check "$1: the profile is complete" sh -c "'$PBDUMP' '$2' | grep -q '^duration_nanos'"
}

start_target ticker

# (a) sampling
term_when sampling 'grep -q "^cprof-attach: profiling" "$WORK/sampling.stderr" && sleep 0.5' \
	-p "$TPID" -d 30s -o "$WORK/a.pb.gz"
check "sampling: exit 0 (rc $RC)" test "$RC" = 0
complete sampling "$WORK/a.pb.gz"
alive sampling

# (b) source lines, on a mute debuginfod. A first run fills the line
# cache for what has local debug files (libc), so that the signal finds
# the pass waiting on the server for lines-bid (no debug file here).
start_target lines-bid
"$ATTACH" -p "$TPID" -t threads -q -o "$WORK/warm.pb.gz" 2>/dev/null
export DEBUGINFOD_URLS=http://127.0.0.1:$MUTE DEBUGINFOD_TIMEOUT=60 DEBUGINFOD_CACHE_PATH=$WORK/dbgcache
c0=$(conns)
term_when lines '[ "$(conns)" -gt "$c0" ]' -p "$TPID" -t threads -o "$WORK/b.pb.gz"
unset DEBUGINFOD_URLS DEBUGINFOD_TIMEOUT DEBUGINFOD_CACHE_PATH
check "lines: exit 0 (rc $RC)" test "$RC" = 0
complete lines "$WORK/b.pb.gz"
check "lines: a note says the lines were cut short" grep -q "stopped by a signal: source lines" "$WORK/lines.stderr" ||
	cat "$WORK/lines.stderr"
alive lines
start_target ticker

# (c) a series' sleep: the first capture is quick (the line cache is warm).
"$ATTACH" -p "$TPID" -t threads -q -o "$WORK/warm2.pb.gz" 2>/dev/null
term_when series '[ -e "$WORK/c-1.pb.gz" ] && sleep 0.5' -p "$TPID" -t threads --every 30s -o "$WORK/c-%n.pb.gz"
check "series: exit 0 (rc $RC)" test "$RC" = 0
complete series "$WORK/c-1.pb.gz"
check "series: no second capture" test ! -e "$WORK/c-2.pb.gz"
alive series

# (d) --push: a refused server (retries with backoff), then a mute one (a request in flight).
term_when push-refused 'grep -q "cannot push" "$WORK/push-refused.stderr" && grep -q "wrote the profile" "$WORK/push-refused.stderr"' \
	-p "$TPID" -t threads --every 10s --push http://127.0.0.1:1 --spool "$WORK/spool1"
check "push-refused: exit 7, profiles kept (rc $RC)" test "$RC" = 7
check "push-refused: the spool holds them" sh -c "ls '$WORK/spool1' | grep -q ."
alive push-refused
c0=$(conns)
term_when push-mute '[ "$(conns)" -gt "$c0" ] && grep -q "wrote the profile" "$WORK/push-mute.stderr"' \
	-p "$TPID" -t threads --every 10s --push "http://127.0.0.1:$MUTE" --push-timeout 60s --spool "$WORK/spool2"
check "push-mute: exit 7, profiles kept (rc $RC)" test "$RC" = 7
alive push-mute

# (e) writing into a pipe that is never read: a dump of 200 threads is
# larger than a pipe holds. The signal comes once it waits in write(2).
start_target many
"$ATTACH" -p "$TPID" -t threads --format dump -o - 2>"$WORK/e.stderr" | sleep 120 &
sleep 0.2
ap=$(pgrep -n -f "cprof-attach -p $TPID -t threads --format dump")
for i in $(seq 1 600); do
	[ "$(cut -d' ' -f1 "/proc/$ap/syscall" 2>/dev/null)" = 1 ] && break
	sleep 0.1
done
t0=$(date +%s.%N)
kill -TERM "$ap"
for i in $(seq 1 100); do kill -0 "$ap" 2>/dev/null || break; sleep 0.05; done
t1=$(date +%s.%N)
SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
check "write: SIGTERM ends it within 2 s (${SECS}s)" awk -v s="$SECS" 'BEGIN { exit !(s < 2) }'
kill -KILL "$ap" 2>/dev/null
check "write: one line names the phase" grep -q "while writing the profile: exiting (exit 8)" "$WORK/e.stderr" ||
	cat "$WORK/e.stderr"
alive write
pkill -f "^sleep 120$" 2>/dev/null
finish
