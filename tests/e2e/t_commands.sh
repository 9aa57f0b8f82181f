#!/usr/bin/env bash
# Commands for what users do (issue 29): `dump -p PID` is every thread's
# stack now on stdout, the same bytes as `-t threads --format dump -o -`
# but for the title's time; `record` is the default command; a command
# refuses the options it does not take, naming both; `--help` lists the
# commands, and each command's --help shows only its options.
. "$(dirname "$0")/lib.sh"

start_target parking
"$ATTACH" dump -p "$TPID" >"$WORK/a.txt" 2>"$WORK/a.err"
rc=$?
check "dump -p PID exits 0 ($rc)" [ "$rc" = 0 ]
"$ATTACH" -p "$TPID" -t threads --format dump -o - >"$WORK/b.txt" 2>/dev/null
# The same threads, named alike (their stacks move: one thread ticks).
check "dump is -t threads --format dump -o -: the same threads" \
	cmp -s <(grep -o '^thread [0-9]* "[^"]*"' "$WORK/a.txt" | sort) \
	<(grep -o '^thread [0-9]* "[^"]*"' "$WORK/b.txt" | sort)
check "dump shows the parked threads" [ "$(grep -c '^thread [0-9]* "' "$WORK/a.txt")" -ge 4 ]
"$ATTACH" dump -p "$TPID" -o "$WORK/d.folded" --format folded -q
check "dump -o FILE --format folded writes the file" [ -s "$WORK/d.folded" ]
"$ATTACH" record -p "$TPID" -t threads -o "$WORK/r.pb.gz" -q
check "record is a command too" gzip -t "$WORK/r.pb.gz"
"$ATTACH" dump -p "$TPID" -d 2s 2>"$WORK/e1"
rc=$?
check "dump refuses -d, exit 2 ($rc): $(cat "$WORK/e1")" \
	sh -c "[ $rc = 2 ] && grep -q 'dump does not take --duration' '$WORK/e1'"
"$ATTACH" bogus -p "$TPID" 2>"$WORK/e2"
rc=$?
check "an unknown command is a usage error ($rc): $(cat "$WORK/e2")" \
	sh -c "[ $rc = 2 ] && grep -q 'unknown command \"bogus\"' '$WORK/e2'"
"$ATTACH" dumb -p "$TPID" 2>"$WORK/e3"
check "a mistyped command names the nearest: $(cat "$WORK/e3")" grep -q 'did you mean dump?' "$WORK/e3"
"$ATTACH" "$TPID" 2>"$WORK/e4"
check "a bare pid is taken for what it is: $(cat "$WORK/e4")" grep -q "a process id? -p $TPID" "$WORK/e4"
"$ATTACH" --help >"$WORK/h"
check "--help lists the commands" sh -c "grep -q '^  record ' '$WORK/h' && grep -q '^  dump ' '$WORK/h'"
"$ATTACH" dump --help >"$WORK/hd"
check "dump --help: its usage, and not the options it refuses" \
	sh -c "grep -q '^usage: cprof-attach dump' '$WORK/hd' && ! grep -qE '^ +(-., )?--(every|push|duration) ' '$WORK/hd'"
check "target left running" not_stopped "$TPID"
finish
