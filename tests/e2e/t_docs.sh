#!/usr/bin/env bash
# Each option is defined once (attach/cli/optable.c) and --help is made
# from it (each command's: cprof-attach COMMAND --help); the man page (doc/cprof-attach.1, one .TP entry per option)
# and the reference table of doc/options.md must name every option --help
# shows, and no option it does not. A mistyped option suggests the
# nearest one.
. "$(dirname "$0")/lib.sh"

"$ATTACH" --help >"$WORK/help" || fail "--help failed"
# Every command's --help too: an option only one command takes (top's
# --interval) is still an option the docs must name.
for cmd in $(awk '/^commands/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }' "$WORK/help"); do
	"$ATTACH" "$cmd" --help >>"$WORK/help" || fail "$cmd --help failed"
done
grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' "$WORK/help" | grep -oE -- '--[a-z-]+' | sort -u >"$WORK/h"
awk 'prev ~ /^\.TP/ { print } { prev = $0 }' "$TOP/doc/cprof-attach.1" | sed 's/\\-/-/g' |
	grep -oE -- '--[a-z][a-z-]*' | sort -u >"$WORK/m"
grep -E '^\| `-' "$TOP/doc/options.md" | cut -d'|' -f2 | grep -oE -- '--[a-z][a-z-]*' | sort -u >"$WORK/d"
n=$(wc -l <"$WORK/h")
check "--help lists the options ($n)" [ "$n" -ge 25 ]
for doc in m:doc/cprof-attach.1 d:doc/options.md; do
	f=$WORK/${doc%%:*} name=${doc#*:}
	missing=$(comm -23 "$WORK/h" "$f" | tr '\n' ' ')
	extra=$(comm -13 "$WORK/h" "$f" | tr '\n' ' ')
	check "$name has every option --help shows${missing:+ (missing: $missing)}" [ -z "$missing" ]
	check "$name has no option --help does not show${extra:+ (not options: $extra)}" [ -z "$extra" ]
done
"$ATTACH" -p 1 --no-kernal 2>"$WORK/err"
rc=$?
check "a mistyped option is a usage error (exit $rc)" [ "$rc" = 2 ]
check "it names the nearest option: $(cat "$WORK/err")" grep -q 'did you mean --no-kernel?' "$WORK/err"
finish
