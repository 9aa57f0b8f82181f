#!/usr/bin/env bash
# Source lines and inlined frames (issue 16) on tests/targets/lines (-O2
# -g): go tool pprof -lines -top gives mix()'s hot line (an always_inline
# helper) at least 60% and cold()'s line 5-30%; -traces shows mix (inline)
# right above work; -list shows work's source with time on mix's call; the mappings say they have file names, line numbers
# and inlined frames; --no-lines leaves them out. The other kinds carry
# lines too: a thread snapshot's dump marks nap() inlined at its line, the
# text form appends FILE:LINE, a wall profile and a heap profile (through
# libcprof.so) name the inlined helper's line; folded and SVG with --lines
# show "function (file:line)" frames.
. "$(dirname "$0")/lib.sh"

SRC=$TOP/tests/targets/lines.c
line_of() { grep -n "/\* $1 \*/" "$SRC" | head -1 | cut -d: -f1; }
HOT=$(line_of HOT_LINE)
COLD=$(line_of COLD_LINE)
NAP=$(line_of NAP_LINE)
HOLD=$(line_of HOLD_LINE)

# lines_flat FILE LINE: the flat% of lines.c:LINE in pprof -lines -top.
lines_flat() {
	go tool pprof -lines -top -nodecount=1000 -symbolize=none "$1" 2>/dev/null |
		awk -v l="lines.c:$2" '{ for (i = 6; i <= NF; i++) if ($i ~ l "$") { sub("%", "", $2); s += $2 } }
			END { print s + 0 }'
}

start_target lines
"$ATTACH" -p "$TPID" -d 3s -o "$WORK/cpu.pb.gz" -q || fail "cpu capture failed"
go tool pprof -lines -top -symbolize=none "$WORK/cpu.pb.gz" >"$WORK/lines.txt" 2>"$WORK/lines.err"
check "pprof -lines -top prints no warning" [ ! -s "$WORK/lines.err" ]
hot=$(lines_flat "$WORK/cpu.pb.gz" "$HOT")
cold=$(lines_flat "$WORK/cpu.pb.gz" "$COLD")
echo "hot line $HOT: $hot%, cold line $COLD: $cold%"
check "the inlined helper's hot line (lines.c:$HOT) holds >= 60% ($hot)" \
	awk -v v="$hot" 'BEGIN { exit !(v >= 60) }'
check "the cold function's line (lines.c:$COLD) holds 5-30% ($cold)" \
	awk -v v="$cold" 'BEGIN { exit !(v >= 5 && v <= 30) }'
check "the hot line is mix's, marked inline" grep -qE " mix [^ ]*lines.c:$HOT \(inline\)$" "$WORK/lines.txt" ||
	cat "$WORK/lines.txt"

go tool pprof -traces -symbolize=none "$WORK/cpu.pb.gz" >"$WORK/traces.txt" 2>/dev/null
check "-traces: mix (inline) directly above work" \
	awk '/mix \(inline\)$/ { getline; if ($1 == "work") ok = 1 } END { exit !ok }' "$WORK/traces.txt"
go tool pprof -list '^work$' -symbolize=none "$WORK/cpu.pb.gz" >"$WORK/list.txt" 2>/dev/null
check "-list work: the source, with mix's call line holding time" \
	grep -qE '^ +[.0-9a-z]+ +[0-9.]+m?s +[0-9]+:.*x = mix\(x\);' "$WORK/list.txt" || cat "$WORK/list.txt"
go tool pprof -top -symbolize=none "$WORK/cpu.pb.gz" >"$WORK/top.txt" 2>/dev/null
check "-top without -lines lists the inlined helper as a function of its own" \
	grep -qE ' mix \(inline\)$' "$WORK/top.txt" || cat "$WORK/top.txt"
go tool pprof -raw -symbolize=none "$WORK/cpu.pb.gz" >"$WORK/raw.txt" 2>/dev/null
check "mapping 1 has functions, file names, line numbers, inlined frames" \
	sh -c "awk '/^Mappings/ { getline; print; exit }' '$WORK/raw.txt' | grep -qF '[FN][FL][LN][IN]'"

"$ATTACH" -p "$TPID" -d 1s --no-lines -o "$WORK/nolines.pb.gz" -q || fail "--no-lines capture failed"
"$PBDUMP" "$WORK/nolines.pb.gz" >"$WORK/nolines.txt"
check "--no-lines: no file names in the profile" sh -c "! grep -q 'lines\\.c' '$WORK/nolines.txt'"
check "--no-lines: work still named" grep -q ';work' "$WORK/nolines.txt"

# A snapshot: the napper's stack in a dump and in Go's text form.
"$ATTACH" -p "$TPID" -t threads --format dump -o "$WORK/dump.txt" -q
check "dump: nap marked inlined at lines.c:$NAP" grep -qE " nap \(inlined\) at lines.c:$NAP \(lines\)$" "$WORK/dump.txt" ||
	cat "$WORK/dump.txt"
check "dump: napper below it, at its own line" \
	awk '/ nap \(inlined\)/ { getline; if ($3 ~ /^napper\+0x/ && $5 ~ /^lines.c:[0-9]+$/) ok = 1 } END { exit !ok }' "$WORK/dump.txt"
"$ATTACH" -p "$TPID" -t threads --format text -o "$WORK/threads.txt" -q
check "text: frames end in FILE:LINE" grep -qP "^#\t0x[0-9a-f]+\tnap\t$SRC:$NAP$" "$WORK/threads.txt"

"$ATTACH" -p "$TPID" -t wall -d 1s -o "$WORK/wall.pb.gz" -q
check "wall: the napper's time at nap's line" sh -c \
	"go tool pprof -lines -top -symbolize=none '$WORK/wall.pb.gz' 2>/dev/null | grep -qE ' nap [^ ]*lines.c:$NAP \(inline\)$'"

"$ATTACH" -p "$TPID" -d 1s --format folded --lines -o "$WORK/lines.folded" -q
check "folded --lines: work (lines.c:N);mix (lines.c:$HOT)" \
	grep -qE "work \(lines.c:[0-9]+\);mix \(lines.c:$HOT\) [0-9]+$" "$WORK/lines.folded"
"$ATTACH" -p "$TPID" -d 1s --format folded -o "$WORK/plain.folded" -q
check "folded without --lines: plain names" grep -qE ";work;mix [0-9]+$" "$WORK/plain.folded"
"$ATTACH" -p "$TPID" -d 1s --format svg --lines -o "$WORK/lines.svg" -q
check "svg --lines: a mix (lines.c:$HOT) frame" grep -qF "mix (lines.c:$HOT)" "$WORK/lines.svg"
"$ATTACH" -p "$TPID" -d 1s --format dump --lines -o - -q 2>"$WORK/usage.err" >/dev/null
check "--lines with another format is a usage error" grep -q -- "--lines applies to" "$WORK/usage.err"

# Heap: the allocation inside the inlined hold(), through the shim.
TARGET_ENV=(LD_PRELOAD="$B/libcprof.so" CPROF_SAMPLE_RATE=1)
start_target lines heap
TARGET_ENV=()
"$ATTACH" -p "$TPID" -t heap -o "$WORK/heap.pb.gz" -q || fail "heap capture failed"
check "heap: the live blocks at hold's line (lines.c:$HOLD), inlined" sh -c \
	"go tool pprof -lines -top -symbolize=none '$WORK/heap.pb.gz' 2>/dev/null | grep -E ' hold [^ ]*lines.c:$HOLD \(inline\)$' | grep -q MB"
finish
