#!/usr/bin/env bash
# The cache of source lines by build ID (unwind/linecache.h), on a
# stripped copy of tests/targets/lines (its DWARF in a .gnu_debuglink file
# beside it), stopped with SIGSTOP so that every snapshot sees the same
# stacks: a first snapshot looks its lines up in DWARF and writes
# $XDG_CACHE_HOME/cprof/lines/BUILDID-DEV-INODE.lines (mode 0600 in a 0700
# directory); a second takes every line from the cache (--stats: none
# looked up in DWARF; strace: the debug file opened once fewer, libdw's
# open gone) and its dump is byte-identical to the first's; with the
# debug file then taken away, the inlined frames and lines are still
# there, and --no-line-cache gives none (so they did come from the
# cache). A corrupt cache file is ignored and replaced by a valid one; a
# directory others may write to, or a symlink, gets one warning and the
# capture goes on with lines from DWARF; an object without a build ID is
# looked up in DWARF every time; two snapshots racing on an empty cache
# both succeed and leave a file the next one uses.
. "$(dirname "$0")/lib.sh"

SRC=$TOP/tests/targets/lines.c
NAP=$(grep -n '/\* NAP_LINE \*/' "$SRC" | cut -d: -f1)
DIR=$XDG_CACHE_HOME/cprof/lines
mkdir -p "$WORK/lc"
cp "$TARGETS/lines-link" "$TARGETS/lines-link.debug" "$WORK/lc/"
bid=$(readelf -n "$WORK/lc/lines-link" | awk '/Build ID/ { print $3 }')
FILE= # the cache file, $DIR/$bid-DEV-INODE.lines: named once written

"$WORK/lc/lines-link" >"$WORK/lc.out" 2>&1 &
TPID=$!
PIDS="$PIDS $TPID"
wait_napping "$TPID" "$WORK/lc.out" || fail "lines-link: its napper never slept"
stop_all "$TPID" || fail "lines-link: not all threads stopped"

snapshot() { # OUT [options...]
	local out=$1
	shift
	"$ATTACH" -p "$TPID" -t threads --format dump --stats -o "$out" "$@" 2>"$out.err"
}
# cached OUT / dwarf OUT: the stats' counts of addresses from the cache, from DWARF.
cached() { sed -n 's/.* (\([0-9]*\) from the line cache, .*/\1/p' "$1.err"; }
dwarf() { sed -n 's/.*, \([0-9]*\) looked up in DWARF).*/\1/p' "$1.err"; }
# frames OUT: the dump without its first line (the time).
frames() { tail -n +2 "$1"; }
# debug_opens TRACE: successful opens of lines-link.debug in an strace log
# (openat2: cprof resolves it inside the target's root, common/troot.h).
debug_opens() { grep 'lines-link\.debug"' "$1" | grep -vc ' = -1 '; }
has_nap() { grep -qE " nap \(inlined\) at lines.c:$NAP \(lines-link\)$" "$1"; }

snapshot "$WORK/s1.txt" || fail "first snapshot failed"
check "first snapshot: nap inlined at lines.c:$NAP, from the debug link" has_nap "$WORK/s1.txt" ||
	cat "$WORK/s1.txt" "$WORK/s1.txt.err"
echo "first: $(cached "$WORK/s1.txt") from the cache, $(dwarf "$WORK/s1.txt") from DWARF"
check "first snapshot: nothing from the empty cache" [ "$(cached "$WORK/s1.txt")" = 0 ]
check "first snapshot: lines looked up in DWARF" [ "$(dwarf "$WORK/s1.txt")" -gt 0 ]
FILE=$(echo "$DIR/$bid"-*.lines)
check "the cache file for build ID $bid was written" [ -s "$FILE" ]
check "the cache file is mode 0600, its directory 0700" \
	sh -c "[ \$(stat -c %a '$FILE') = 600 ] && [ \$(stat -c %a '$DIR') = 700 ]"
check "no temporary file is left" sh -c "! ls -a '$DIR' | grep -q '\\.tmp\$'"

snapshot "$WORK/s2.txt" || fail "second snapshot failed"
echo "second: $(cached "$WORK/s2.txt") from the cache, $(dwarf "$WORK/s2.txt") from DWARF"
check "second snapshot: nothing looked up in DWARF" [ "$(dwarf "$WORK/s2.txt")" = 0 ]
check "second snapshot: every address from the cache ($(cached "$WORK/s2.txt"))" \
	[ "$(cached "$WORK/s2.txt")" = "$(dwarf "$WORK/s1.txt")" ]
frames "$WORK/s1.txt" >"$WORK/f1.txt"
frames "$WORK/s2.txt" >"$WORK/f2.txt"
check "the dump is byte-identical to the first snapshot's ($(grep -c '#' "$WORK/f1.txt") frames)" \
	cmp -s "$WORK/f1.txt" "$WORK/f2.txt" || diff "$WORK/f1.txt" "$WORK/f2.txt"
if command -v strace >/dev/null; then
	# LeakSanitizer cannot run under a tracer (the sanitizer pass).
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	strace -f -qq -e trace=openat,openat2 -o "$WORK/cold.trace" \
		"$ATTACH" -p "$TPID" -t threads -q -o /dev/null --no-line-cache
	strace -f -qq -e trace=openat,openat2 -o "$WORK/warm.trace" \
		"$ATTACH" -p "$TPID" -t threads -q -o /dev/null
	cold=$(debug_opens "$WORK/cold.trace")
	warm=$(debug_opens "$WORK/warm.trace")
	check "the debug file is opened once fewer with the cache: libdw does not open it ($cold -> $warm)" \
		[ "$warm" -eq $((cold - 1)) ]
else
	echo "SKIP: strace is not installed: the debug file's opens are not counted"
fi

mv "$WORK/lc/lines-link.debug" "$WORK/lines-link.debug.away"
snapshot "$WORK/s3.txt" || fail "snapshot without the debug file failed"
check "without the debug file: nap inlined at lines.c:$NAP, from the cache" has_nap "$WORK/s3.txt" ||
	cat "$WORK/s3.txt"
check "without the debug file: nothing looked up in DWARF" [ "$(dwarf "$WORK/s3.txt")" = 0 ]
snapshot "$WORK/s3n.txt" --no-line-cache || fail "--no-line-cache snapshot failed"
check "--no-line-cache without the debug file: no lines for lines-link" \
	sh -c "! grep -q 'lines.c:' '$WORK/s3n.txt'" || cat "$WORK/s3n.txt"
check "--no-line-cache: nothing from the cache" [ "$(cached "$WORK/s3n.txt")" = 0 ]
mv "$WORK/lines-link.debug.away" "$WORK/lc/lines-link.debug"

# A corrupt file: ignored, lines from DWARF, then replaced by a valid one.
head -c 100 /dev/urandom >"$FILE"
snapshot "$WORK/s4.txt" || fail "snapshot over a corrupt cache file failed"
check "a corrupt cache file is ignored: lines from DWARF ($(dwarf "$WORK/s4.txt"))" \
	sh -c "has() { grep -qE ' nap \\(inlined\\) at lines.c:$NAP \\(lines-link\\)\$' \"\$1\"; }; has '$WORK/s4.txt' && [ $(dwarf "$WORK/s4.txt") -gt 0 ]"
check "... and no message about it" sh -c "! grep -v ': stats: ' '$WORK/s4.txt.err' | grep -qE 'warning|cache'"
snapshot "$WORK/s5.txt"
check "... and replaced: the next snapshot takes every line from the cache" \
	[ "$(dwarf "$WORK/s5.txt")" = 0 ]

# A directory others may write to: one warning, lines from DWARF all the same.
chmod 777 "$DIR"
snapshot "$WORK/s6.txt" || fail "snapshot with a refused cache directory failed"
check "a group/other-writable cache directory gets one warning" \
	sh -c "[ \$(grep -c 'line cache directory \"$DIR\" is writable by others (mode 777); source lines are not cached' '$WORK/s6.txt.err') = 1 ]" ||
	cat "$WORK/s6.txt.err"
check "... and the capture has its lines from DWARF" has_nap "$WORK/s6.txt"
chmod 700 "$DIR"
mv "$DIR" "$WORK/real-lines"
ln -s "$WORK/real-lines" "$DIR"
snapshot "$WORK/s7.txt"
check "a cache directory that is a symlink is refused" \
	grep -q "line cache directory \"$DIR\" is a symbolic link; source lines are not cached" "$WORK/s7.txt.err" ||
	cat "$WORK/s7.txt.err"
rm "$DIR"

# An object without a build ID is not cached: its lines from DWARF every time.
"$TARGETS/lines-nobid" >"$WORK/nobid.out" 2>&1 &
nb=$!
PIDS="$PIDS $nb"
wait_napping "$nb" "$WORK/nobid.out" || fail "lines-nobid: its napper never slept"
stop_all "$nb" || fail "lines-nobid: not all threads stopped"
check "lines-nobid has no build ID" sh -c "! readelf -n '$TARGETS/lines-nobid' | grep -q 'Build ID'"
"$ATTACH" -p "$nb" -t threads --format dump --stats -o "$WORK/n1.txt" 2>"$WORK/n1.txt.err"
"$ATTACH" -p "$nb" -t threads --format dump --stats -o "$WORK/n2.txt" 2>"$WORK/n2.txt.err"
check "without a build ID: lines all the same" grep -qE " nap \(inlined\) at lines.c:$NAP \(lines-nobid\)$" "$WORK/n2.txt"
check "without a build ID: looked up in DWARF again ($(dwarf "$WORK/n2.txt") addresses)" \
	[ "$(dwarf "$WORK/n2.txt")" -gt 0 ]
nbaddr=$(grep '(lines-nobid)$' "$WORK/n2.txt" | awk '{ print $2 }' | sort -u | wc -l)
check "... every one of its $nbaddr addresses" [ "$(dwarf "$WORK/n2.txt")" -ge "$nbaddr" ]
check "... and no cache file for it: only build IDs' names there" \
	sh -c "! ls '$DIR' | grep -vqE '^[0-9a-f]+-[0-9a-f]+-[0-9a-f]+\.lines\$'"
kill -9 "$nb"
wait "$nb" 2>/dev/null

# Two snapshots racing on an empty cache: both succeed, the file is valid.
snapshot "$WORK/r1.txt" & r1=$!
snapshot "$WORK/r2.txt" & r2=$!
wait $r1 && wait $r2
check "two racing snapshots both succeed" [ $? = 0 ]
check "... each with every line" sh -c "grep -q 'lines.c:$NAP' '$WORK/r1.txt' && grep -q 'lines.c:$NAP' '$WORK/r2.txt'"
snapshot "$WORK/r3.txt"
check "... and leave a file the next snapshot takes every line from" \
	sh -c "[ $(dwarf "$WORK/r3.txt") = 0 ] && [ $(cached "$WORK/r3.txt") -gt 0 ]"
finish
