#!/usr/bin/env bash
# Debug information from where distributions put it (issue 16), each on a
# stripped copy of tests/targets/lines whose own file has no symbols and
# no DWARF: (a) a separate file under /usr/lib/debug/.build-id/ inside the
# target's mount namespace (a private tmpfs over /usr/lib/debug, as a
# container's image would hold it; the host has none); (b) .gnu_debuglink
# beside the binary, and a debug file whose CRC does not match refused;
# (c) a real debuginfod serving a directory on a local port, with a fresh
# client cache, and one that does not answer giving a one-line note and a
# prompt capture; (d) MiniDebugInfo naming the functions of a binary with
# no other symbols. (a)-(c) give the inlined helper's line; every run gives
# work its name.
. "$(dirname "$0")/lib.sh"

SRC=$TOP/tests/targets/lines.c
NAP=$(grep -n '/\* NAP_LINE \*/' "$SRC" | cut -d: -f1)

# has_lines DUMP OBJECT: the napper's nap() inlined at lines.c:NAP in OBJECT.
has_lines() {
	grep -qE " nap \(inlined\) at lines.c:$NAP \($2\)$" "$1"
}

# Each capture finds its debug file afresh: lines cached by build ID from an
# earlier capture (the stale copy below has lines-link's build ID) would
# hide what this test is about.
snapshot() { # PID OUT [env...]
	local pid=$1 out=$2
	shift 2
	env "$@" "$ATTACH" -p "$pid" -t threads --format dump --no-line-cache -o "$out" 2>"$out.err"
}

build_id() { readelf -n "$1" | awk '/Build ID/ { print $3 }'; }

# (a) By build ID, inside the target's mount namespace only.
bid=$(build_id "$TARGETS/lines-bid")
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	mkdir -p /usr/lib/debug
	unshare -m --propagation private sh -c '
		mount -t tmpfs cprof-test /usr/lib/debug &&
		mkdir -p "/usr/lib/debug/.build-id/$1" &&
		cp "$3" "/usr/lib/debug/.build-id/$1/$2.debug" &&
		exec "$4"' sh "${bid:0:2}" "${bid:2}" "$TARGETS/lines-bid.debug" "$TARGETS/lines-bid" \
		>"$WORK/ns.out" 2>&1 &
	nspid=$!
	PIDS="$PIDS $nspid"
	wait_napping "$nspid" "$WORK/ns.out" || fail "lines-bid: its napper never slept"
	check "the host has no debug file for lines-bid" [ ! -e "/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug" ]
	snapshot "$nspid" "$WORK/bid.txt"
	check "(a) build-id file in the target's root: nap inlined at lines.c:$NAP" has_lines "$WORK/bid.txt" lines-bid ||
		cat "$WORK/bid.txt" "$WORK/bid.txt.err"
	kill -9 "$nspid"
else
	echo "SKIP: (a) needs root and unshare -m for a private /usr/lib/debug"
fi

# (b) .gnu_debuglink beside the binary, CRC checked.
start_target lines-link
snapshot "$TPID" "$WORK/link.txt"
check "(b) debuglink: nap inlined at lines.c:$NAP" has_lines "$WORK/link.txt" lines-link ||
	cat "$WORK/link.txt"
mkdir -p "$WORK/stale"
cp "$TARGETS/lines-link" "$WORK/stale/"
cp "$TARGETS/lines-link.debug" "$WORK/stale/lines-link.debug"
printf 'x' >>"$WORK/stale/lines-link.debug" # another file now: its CRC differs
"$WORK/stale/lines-link" >"$WORK/stale.out" 2>&1 &
sp=$!
PIDS="$PIDS $sp"
wait_napping "$sp" "$WORK/stale.out" || fail "stale lines-link: its napper never slept"
snapshot "$sp" "$WORK/stale.txt"
check "(b) a debug link whose CRC does not match is refused" sh -c "! grep -q 'lines.c' '$WORK/stale.txt'" ||
	cat "$WORK/stale.txt"
check "(b) ... and the stripped functions are named by their start" \
	grep -qE ' lines-link\+0x[0-9a-f]+\+0x[0-9a-f]+ \(lines-link\)$' "$WORK/stale.txt"

# (c) A real debuginfod over a directory, a fresh client cache.
start_target lines-bid
if command -v debuginfod >/dev/null; then
	mkdir -p "$WORK/served" "$WORK/cache"
	cp "$TARGETS/lines-bid.debug" "$WORK/served/"
	for try in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 20000))
		debuginfod -F "$WORK/served" -p "$port" -d "$WORK/dbgd.sqlite" -t 0 -g 0 >"$WORK/dbgd.log" 2>&1 &
		dp=$!
		PIDS="$PIDS $dp"
		up=""
		for i in $(seq 1 100); do
			if curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$bid/debuginfo"; then up=1; break; fi
			kill -0 "$dp" 2>/dev/null || break
			sleep 0.1
		done
		[ -n "$up" ] && break
		kill -9 "$dp" 2>/dev/null
	done
	check "debuginfod serves the debug file on port $port" [ -n "$up" ]
	snapshot "$TPID" "$WORK/dbgd.txt" DEBUGINFOD_URLS="http://127.0.0.1:$port" \
		DEBUGINFOD_CACHE_PATH="$WORK/cache"
	check "(c) debuginfod: nap inlined at lines.c:$NAP" has_lines "$WORK/dbgd.txt" lines-bid ||
		cat "$WORK/dbgd.txt" "$WORK/dbgd.txt.err"
	check "(c) the client cached it" [ -s "$WORK/cache/$bid/debuginfo" ]
	check "(c) the server was asked for it" grep -q "GET /buildid/$bid/debuginfo 200" "$WORK/dbgd.log"
	kill -9 "$dp"
else
	echo "SKIP: (c) no debuginfod (Debian's debuginfod package)"
fi
# A server that accepts and never answers: the capture ends anyway, with a note.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
conns = []
end = time.time() + 60
while time.time() < end:
    s.settimeout(1)
    try: conns.append(s.accept()[0])
    except OSError: pass
' >"$WORK/mute.port" &
mp=$!
PIDS="$PIDS $mp"
for i in $(seq 1 50); do [ -s "$WORK/mute.port" ] && break; sleep 0.1; done
t0=$(date +%s%N)
snapshot "$TPID" "$WORK/mute.txt" DEBUGINFOD_URLS="http://127.0.0.1:$(cat "$WORK/mute.port")" \
	DEBUGINFOD_CACHE_PATH="$WORK/cache2" DEBUGINFOD_TIMEOUT=2
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
echo "snapshot with a mute debuginfod: ${ms} ms"
check "a mute debuginfod does not hang the capture (${ms} ms, bar 15 s)" [ "$ms" -lt 15000 ]
check "a mute debuginfod gets one note" \
	sh -c "[ \$(grep -c 'debuginfod (http://127.0.0.1:[0-9]*) did not answer in time' '$WORK/mute.txt.err') = 1 ]" ||
	cat "$WORK/mute.txt.err"
check "the profile is written all the same" grep -q '^thread .* "worker"' "$WORK/mute.txt"
kill -9 "$mp" 2>/dev/null

# (d) MiniDebugInfo: names, no lines.
start_target lines-mini
check "lines-mini has no .symtab" sh -c "! readelf -S '$TARGETS/lines-mini' | grep -q ' .symtab '"
snapshot "$TPID" "$WORK/mini.txt"
check "(d) MiniDebugInfo names napper (a static function)" grep -qE ' napper\+0x[0-9a-f]+ \(lines-mini\)$' "$WORK/mini.txt" ||
	cat "$WORK/mini.txt"
finish
