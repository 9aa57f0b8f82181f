#!/usr/bin/env bash
# A file truncated while cprof has it mapped (issue 25, bounded work): the
# attacker's shared object (built with -g, its section headers, .symtab
# and DWARF behind an 8 MiB padding section) is truncated by the target
# itself to the part its loaded segments need, so that the target runs on
# while every read cprof makes past that point would raise SIGBUS:
#   before  truncated before the capture, still mapped (cprof sees the
#           short file: no sections, no crash);
#   during  truncated 300 ms after cprof opens it (inotify), before the
#           lines pass reads its section headers;
#   loop    truncated and restored every 2 ms through the whole capture.
# cprof-attach must not die of SIGBUS (exit 135), must complete the
# capture (exit 0) and say that the object changed under it, and the
# target must run on.
. "$(dirname "$0")/lib.sh"

bounds_so "$WORK/tso.c" "$WORK/t0.so" -g || exit 1
head -c $((8 << 20)) /dev/zero >"$WORK/pad"
objcopy --add-section .pad="$WORK/pad" "$WORK/t0.so" "$WORK/t.so" || exit 1
# KEEP: the end of the last loaded segment's file bytes, to a page.
keep=0
while read -r _ off _ _ filesz _; do
	[ $((off + filesz)) -gt "$keep" ] && keep=$((off + filesz))
done < <(readelf -l -W "$WORK/t.so" | grep '^ *LOAD')
keep=$(((keep + 4095) / 4096 * 4096))
shoff=$(readelf -h "$WORK/t.so" | awk '/Start of section headers/ { print $5 }')
echo "   object $(stat -c %s "$WORK/t.so") bytes, kept $keep, section headers at $shoff"
check "the section headers lie past the part kept" test "$shoff" -gt "$keep"

for mode in before during loop; do
	cp "$WORK/t.so" "$AWORK/trunc-$mode.so"
	chown "$ATTACKER_UID:$ATTACKER_GID" "$AWORK/trunc-$mode.so"
	start_hostile "t$mode" as_attacker "$TARGETS/hostile_bounds_dl" "trunc-$mode" "$keep" \
		"$AWORK/trunc-$mode.so"
	bounded "t$mode" 30 300 -p "$TPID" -t wall -d 2s -o "$WORK/t$mode.pb.gz"
	check "t$mode: no SIGBUS (exit $RC)" test "$RC" != 135
	check "t$mode: the capture completes (exit $RC)" test "$RC" = 0 || cat "$WORK/t$mode.stderr"
	if [ "$mode" = during ]; then
		check "t$mode: the target truncated the object" grep -q truncated "$WORK/t$mode.out"
		check "t$mode: a note names the object that changed" \
			grep -q "trunc-$mode.so changed on disk while it was read" "$WORK/t$mode.stderr" ||
			cat "$WORK/t$mode.stderr"
	fi
	alive "t$mode"
	kill -9 "$TPID" 2>/dev/null
done
finish
