#!/usr/bin/env bash
# --push: every capture of a series reaches a Pyroscope stand-in
# (tests/tools/pyrecv, which checks each request against the ingest
# contract: method, path, every query parameter, Content-Type, the
# multipart field, the authentication and tenant headers), in order, none
# lost and none twice, through a server answering 503 for a while, a
# server down for a whole series (the next run delivers the spool), a 400
# (reported once with the server's message) and a full spool (the oldest
# dropped, counted). No assertion depends on timing: where a retry may or
# may not have succeeded before the series ended, the test accepts either
# and checks that the exit code and the JSON agree, then lets a later run
# deliver the rest.
. "$(dirname "$0")/lib.sh"

PYRECV=$B/tests/tools/pyrecv
if ! command -v python3 >/dev/null; then
	fail "python3 is needed to check the JSON summary"
	exit 1
fi

# recv NAME ARGS...: start a receiver storing into $WORK/NAME, set PORT and RPID.
recv() {
	local name=$1 i
	shift
	mkdir -p "$WORK/$name"
	"$PYRECV" -d "$WORK/$name" "$@" >"$WORK/$name.port" 2>"$WORK/$name.err" &
	RPID=$!
	PIDS="$PIDS $RPID"
	for i in $(seq 1 100); do
		grep -qs '^port ' "$WORK/$name.port" && break
		sleep 0.05
	done
	PORT=$(awk '/^port/ { print $2 }' "$WORK/$name.port")
	[ -n "$PORT" ] || { echo "pyrecv $name did not start" >&2; exit 1; }
}

# A port where nothing listens: a receiver's, once it is gone.
dead_port() {
	recv dead
	kill "$RPID"
	wait "$RPID" 2>/dev/null
	echo "$PORT"
}

# pushed DIR: the time_nanos of each profile DIR holds, in arrival order,
# after checking that go tool pprof decodes every one.
pushed() {
	local f
	for f in "$1"/[0-9]*.pb.gz; do
		[ -e "$f" ] || continue
		go tool pprof -raw "$f" >/dev/null 2>&1 || echo "undecodable $f"
		"$PBDUMP" "$f" | awk '/^time_nanos/ { print $2 }'
	done
}

# starts FILE...: the start_ns of the JSON lines, in capture order.
starts() {
	python3 -c '
import json, sys
for f in sys.argv[1:]:
    for l in open(f):
        print(json.loads(l)["start_ns"])' "$@"
}

# outcomes FILE: "capture:push[:reason]" of each JSON line.
outcomes() {
	python3 -c '
import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    print("%d:%s%s" % (o["capture"], o.get("push"), ":" + o["push_reason"] if "push_reason" in o else ""))' "$1"
}

start_target duty
tp=$TPID
app=$(basename "$(readlink /proc/$tp/exe)")

# 1. A 5-capture series, also written locally (-o), with basic
# authentication from the environment and a tenant: all pushed, in order.
recv r1 --app "$app" --label env=e2e --label team=prof --auth "Basic $(printf 'alice:s3cr3t-pw' | base64)" \
	--tenant acme
CPROF_PUSH_BASIC_AUTH=alice:s3cr3t-pw "$ATTACH" -p "$tp" -d 200ms --every 300ms --count 5 \
	--push "http://127.0.0.1:$PORT" --label env=e2e --label team=prof --tenant acme \
	--spool "$WORK/spool1" -o "$WORK/loc-%n.pb.gz" --summary json >"$WORK/s1.json" 2>"$WORK/s1.err"
rc=$?
check "series of 5 pushed: exit 0 (got $rc)" [ "$rc" = 0 ] || cat "$WORK/s1.err" "$WORK/r1/log" >&2
check "the receiver found no contract violation" sh -c "! grep -q VIOLATION '$WORK/r1/log'" ||
	grep VIOLATION "$WORK/r1/log" >&2
check "five requests, five profiles stored" [ "$(grep -c '^ok' "$WORK/r1/log")" = 5 ]
check "every capture's JSON line says pushed" [ "$(outcomes "$WORK/s1.json" | tr '\n' ' ')" = \
	"1:pushed 2:pushed 3:pushed 4:pushed 5:pushed " ]
check "the profiles arrived in capture order, each once (time_nanos = JSON start_ns)" \
	[ "$(pushed "$WORK/r1")" = "$(starts "$WORK/s1.json")" ]
for n in 1 2 3 4 5; do
	check "capture $n: the local file (-o) is the profile pushed" cmp -s "$WORK/loc-$n.pb.gz" \
		"$WORK/r1/000$n.pb.gz"
done
check "the spool is empty afterwards" [ -z "$(ls -A "$WORK/spool1")" ]
check "the password is in no message and no JSON line" \
	sh -c "! grep -q 's3cr3t' '$WORK/s1.err' '$WORK/s1.json'"

# A bearer token, and credentials in the URL (never echoed either).
recv r1b --app myservice --auth "Bearer tok-123"
"$ATTACH" -p "$tp" -d 200ms --push "http://127.0.0.1:$PORT" --app myservice --bearer-token tok-123 \
	--spool "$WORK/spool1b" -q
check "--bearer-token: pushed with Authorization: Bearer (exit $?)" grep -q '^ok' "$WORK/r1b/log"
recv r1c --auth "Basic $(printf 'bob:url-pw' | base64)"
"$ATTACH" -p "$tp" -d 200ms --push "http://bob:url-pw@127.0.0.1:$PORT/" --spool "$WORK/spool1c" \
	2>"$WORK/s1c.err"
check "credentials in the URL: pushed with basic authentication" grep -q '^ok' "$WORK/r1c/log"
check "credentials in the URL: not echoed" sh -c "! grep -q 'url-pw' '$WORK/s1c.err'"

# 2. 503 for the first 3 requests: retried with backoff; whatever the
# series did not deliver, a later run does. Together: every capture, in
# order, none twice.
recv r2 --app "$app" --fail-503 3
"$ATTACH" -p "$tp" -d 200ms --every 300ms --count 5 --push "http://127.0.0.1:$PORT" \
	--spool "$WORK/spool2" --summary json >"$WORK/s2.json" 2>"$WORK/s2.err"
rc=$?
nspooled=$(outcomes "$WORK/s2.json" | grep -c spooled)
check "503s: exit 0 when all were pushed in the series, 7 when some wait (exit $rc, $nspooled spooled)" \
	[ "$rc" = "$([ "$nspooled" = 0 ] && echo 0 || echo 7)" ]
check "503s: three 503 answers, then the rest taken" [ "$(grep -c '^503' "$WORK/r2/log")" = 3 ]
check "503s: one warning for the failures, with the server's message" \
	[ "$(grep -c 'try later' "$WORK/s2.err")" = 1 ]
"$ATTACH" -p "$tp" -d 200ms --push "http://127.0.0.1:$PORT" --spool "$WORK/spool2" \
	--summary json >"$WORK/s2b.json" 2>"$WORK/s2b.err"
check "503s: the later run exits 0" [ "$?" = 0 ]
check "503s: 6 profiles arrived, in order, none lost, none twice" \
	[ "$(pushed "$WORK/r2")" = "$(starts "$WORK/s2.json" "$WORK/s2b.json")" ]
check "503s: no contract violation" sh -c "! grep -q VIOLATION '$WORK/r2/log'"
check "503s: the spool is empty" [ -z "$(ls -A "$WORK/spool2")" ]

# 3. The server down for the whole series: everything waits in the spool
# as ordinary pprof files; the next run delivers them first, then its own.
dp=$(dead_port)
"$ATTACH" -p "$tp" -d 200ms --every 300ms --count 3 --push "http://127.0.0.1:$dp" \
	--spool "$WORK/spool3" --summary json >"$WORK/s3.json" 2>"$WORK/s3.err"
rc=$?
check "server down: exit 7, profiles unsent (got $rc)" [ "$rc" = 7 ]
check "server down: every capture spooled" [ "$(outcomes "$WORK/s3.json" | tr '\n' ' ')" = \
	"1:spooled 2:spooled 3:spooled " ]
check "server down: three entries in the spool" [ "$(ls "$WORK/spool3" | grep -c '\.pb\.gz$')" = 3 ]
for f in "$WORK"/spool3/*.pb.gz; do
	check "server down: $(basename "$f") is an ordinary profile" go tool pprof -raw "$f" >/dev/null 2>&1
done
check "server down: one warning, naming the server and the spool" \
	[ "$(grep -c "cannot push to http://127.0.0.1:$dp/ingest" "$WORK/s3.err")" = 1 ]
check "server down: the end says 3 of 3 not pushed" grep -q '3 of 3 profiles not pushed' "$WORK/s3.err"
recv r3 --app "$app"
"$ATTACH" -p "$tp" -d 200ms --push "http://127.0.0.1:$PORT" --spool "$WORK/spool3" \
	--summary json >"$WORK/s3b.json" 2>"$WORK/s3b.err"
check "server back: the later run exits 0" [ "$?" = 0 ]
check "server back: the earlier run's 3 then this run's 1, in order" \
	[ "$(pushed "$WORK/r3")" = "$(starts "$WORK/s3.json" "$WORK/s3b.json")" ]
check "server back: said so" grep -q 'pushed 3 profiles an earlier run had kept' "$WORK/s3b.err"
check "server back: the spool is empty" [ -z "$(ls -A "$WORK/spool3")" ]

# 4. A 400: the profile is refused for good; reported once with the
# server's message, not retried.
recv r4 --app "$app" --fail-400 "profile too old: out of order ingestion"
"$ATTACH" -p "$tp" -d 200ms --every 300ms --count 3 --push "http://127.0.0.1:$PORT" \
	--spool "$WORK/spool4" --summary json >"$WORK/s4.json" 2>"$WORK/s4.err"
rc=$?
check "400: exit 7 (got $rc)" [ "$rc" = 7 ]
check "400: the server's message, once" [ "$(grep -c 'profile too old: out of order ingestion' "$WORK/s4.err")" = 1 ]
check "400: the message names the status" grep -q 'HTTP 400' "$WORK/s4.err"
check "400: three requests, none retried" [ "$(grep -c '^400' "$WORK/r4/log")" = 3 ]
check "400: every capture dropped as rejected" [ "$(outcomes "$WORK/s4.json" | tr '\n' ' ')" = \
	"1:dropped:rejected 2:dropped:rejected 3:dropped:rejected " ]
check "400: the spool is empty" [ -z "$(ls -A "$WORK/spool4")" ]

# 5. A full spool: the oldest are dropped, counted and reported. One
# thread snapshot's size (nearly constant) sets a cap for about two.
"$ATTACH" -p "$tp" -t threads --push "http://127.0.0.1:$dp" --spool "$WORK/spool5m" -q
one=$(du -cb "$WORK"/spool5m/* | awk 'END { print $1 }')
cap=$((one * 5 / 2))
"$ATTACH" -p "$tp" -t threads --every 300ms --count 5 --push "http://127.0.0.1:$dp" \
	--spool "$WORK/spool5" --spool-max "$cap" --summary json >"$WORK/s5.json" 2>"$WORK/s5.err"
rc=$?
check "full spool: exit 7 (got $rc)" [ "$rc" = 7 ]
outcomes "$WORK/s5.json" >"$WORK/s5.out"
ndrop=$(grep -c 'dropped:spool full' "$WORK/s5.out")
nkept=$(grep -c ':spooled' "$WORK/s5.out")
check "full spool: some dropped ($ndrop), some kept ($nkept), every capture reported" \
	[ "$ndrop" -ge 1 ] && [ "$nkept" -ge 1 ] && [ $((ndrop + nkept)) = 5 ]
check "full spool: the dropped are the oldest" python3 -c '
import sys
o = [l.split(":") for l in open(sys.argv[1]).read().splitlines()]
o.sort(key=lambda x: int(x[0]))
seen_kept = False
for c in o:
    if c[1] == "spooled": seen_kept = True
    else: assert not seen_kept, o' "$WORK/s5.out"
check "full spool: the spool holds the kept ones, within the cap" \
	[ "$(ls "$WORK/spool5" | grep -c '\.pb\.gz$')" = "$nkept" ] && \
	[ "$(du -cb "$WORK"/spool5/* | awk 'END { print $1 }')" -le "$cap" ]
check "full spool: the count is reported" grep -q "5 of 5 profiles not pushed.*$nkept kept.*$ndrop dropped" "$WORK/s5.err"

# 6. block and mutex: each with Pyroscope's sample-type mapping, so they
# land in distinct series (both say contentions/delay); cpu with none.
TARGET_ENV=(LD_PRELOAD="$B/libcprof.so" CPROF_BLOCK_RATE=10us CPROF_MUTEX_FRACTION=10)
start_target locks -s 30
TARGET_ENV=()
for k in block mutex; do
	recv "r6$k" --app locks --config "$k"
	"$ATTACH" -p "$TPID" -t "$k" --push "http://127.0.0.1:$PORT" --spool "$WORK/spool6" -q
	check "$k: pushed with its sample_type_config (exit $?)" grep -q '^ok' "$WORK/r6$k/log" ||
		cat "$WORK/r6$k/log" >&2
done

# 7. cprof-attach SIGKILLed while its request hangs on a slow server: the
# entry stays in the spool, unlocked (the kernel drops a dead process's
# flock), and the next run delivers it. (The slow server may also have
# taken it: delivery is at least once.)
recv r7slow --app "$app" --delay-ms 5000
"$ATTACH" -p "$tp" -d 200ms --push "http://127.0.0.1:$PORT" --spool "$WORK/spool7" -q &
apid=$!
for _ in $(seq 1 100); do
	ls "$WORK/spool7" 2>/dev/null | grep -q '\.pb\.gz$' && break
	sleep 0.05
done
sleep 0.3
kill -9 "$apid"
wait "$apid" 2>/dev/null
check "SIGKILL mid-push: the profile is still in the spool" [ "$(ls "$WORK/spool7" | grep -c '\.pb\.gz$')" = 1 ]
recv r7 --app "$app"
"$ATTACH" -p "$tp" -d 200ms --push "http://127.0.0.1:$PORT" --spool "$WORK/spool7" -q
check "SIGKILL mid-push: the next run delivers it and its own (exit $?)" \
	[ "$(grep -c '^ok' "$WORK/r7/log")" = 2 ] && [ -z "$(ls -A "$WORK/spool7")" ]

# 8. Two cprof-attach sharing one spool (one per service on a host, the
# default spool): each sends its own run's profiles, so each knows their
# outcome; none is sent twice.
recv r8 --app "$app"
tp1=$tp
start_target duty
tp2=$TPID
"$ATTACH" -p "$tp1" -d 200ms --every 300ms --count 4 --push "http://127.0.0.1:$PORT" \
	--spool "$WORK/spool8" --summary json >"$WORK/s8a.json" 2>"$WORK/s8a.err" &
a1=$!
"$ATTACH" -p "$tp2" -d 200ms --every 300ms --count 4 --push "http://127.0.0.1:$PORT" \
	--spool "$WORK/spool8" --summary json >"$WORK/s8b.json" 2>"$WORK/s8b.err"
rc2=$?
wait "$a1"
rc1=$?
check "shared spool: both exit 0 ($rc1, $rc2)" [ "$rc1" = 0 ] && [ "$rc2" = 0 ]
check "shared spool: every capture of both pushed" [ "$(cat "$WORK/s8a.json" "$WORK/s8b.json" | grep -c '"push":"pushed"')" = 8 ]
check "shared spool: 8 profiles arrived, each once" \
	[ "$(pushed "$WORK/r8" | sort)" = "$(starts "$WORK/s8a.json" "$WORK/s8b.json" | sort)" ]
check "shared spool: no violation, the spool is empty" \
	sh -c "! grep -q VIOLATION '$WORK/r8/log'" && [ -z "$(ls -A "$WORK/spool8")" ]
tp=$tp1

# Usage errors.
"$ATTACH" -p "$tp" --label env=x 2>"$WORK/u.err"
check "--label without --push is a usage error" [ "$?" = 2 ]
"$ATTACH" -p "$tp" --push http://127.0.0.1:1 --label 'env=a,b' 2>"$WORK/u.err"
check "a label value with ',' is refused (Pyroscope's name has no escaping)" [ "$?" = 2 ]
"$ATTACH" -p "$tp" --push http://127.0.0.1:1 --format folded 2>"$WORK/u.err"
check "--push with another format than pprof is refused" [ "$?" = 2 ]
"$ATTACH" -p "$tp" --push ftp://127.0.0.1:1 2>"$WORK/u.err"
check "a URL that is not http(s) is refused" [ "$?" = 2 ]

# libcurl is loaded only for --push: without it, one line and exit 2. Hidden
# in a private mount namespace (root only), the way a host without libcurl4
# would be.
curl_so=$(ldconfig -p | awk '$1 == "libcurl.so.4" { print $NF; exit }')
if [ "$(id -u)" = 0 ] && [ -n "$curl_so" ] && unshare -m true 2>/dev/null; then
	unshare -m sh -c "mount --bind /dev/null '$curl_so' && '$ATTACH' -p $tp -d 100ms --push http://127.0.0.1:1 -q" \
		2>"$WORK/nocurl.err"
	check "--push without libcurl: exit 2 ($?)" [ "$?" = 2 ]
	check "--push without libcurl: one line naming it" \
		sh -c "[ \$(wc -l <'$WORK/nocurl.err') = 1 ] && grep -q '^cprof-attach: --push needs libcurl: ' '$WORK/nocurl.err'"
	unshare -m sh -c "mount --bind /dev/null '$curl_so' && '$ATTACH' -p $tp -d 100ms -o '$WORK/nocurl.pb.gz' -q"
	check "without libcurl, a capture without --push works ($?)" [ "$?" = 0 ]
else
	echo "SKIP: hiding libcurl needs root and unshare"
fi

exit $FAILED
