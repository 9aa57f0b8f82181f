#!/usr/bin/env bash
# h_trust_names — escape sequences in a target's names never reach root's
# terminal. The attacker's target (tests/targets/hostile_trust_names.c)
# names its main thread and a spinning thread with ESC sequences (clear
# the screen, set the window title) and spins in a function whose symbol
# holds one. cprof-attach prints those names on stderr (--top, --stats,
# notes) and stdout (--format dump -o -): the raw bytes must hold no ESC
# (0x1b) and no BEL (0x07), and the names must still be there, escaped as
# \xNN. A path with an ESC in an error message is escaped too.
. "$(dirname "$0")/lib.sh"

start_hostile names as_attacker "$TARGETS/hostile_trust_names"

# no_ctl NAME FILE...: no ESC nor BEL byte in any of the files.
no_ctl() {
	local name=$1 f
	shift
	for f in "$@"; do
		if LC_ALL=C grep -q $'[\x1b\x07]' "$f"; then
			fail "$name: a raw control byte in $(basename "$f"): $(LC_ALL=C grep -a $'[\x1b\x07]' "$f" | head -2 | cat -v)"
			return 1
		fi
	done
	pass "$name: no ESC or BEL byte on stdout or stderr"
}

# A CPU profile with its summary and statistics on stderr.
bounded top 20 200 -p "$TPID" -d 1s --top --stats -o "$WORK/cpu.pb.gz"
no_ctl "--top --stats" "$WORK/top.stdout" "$WORK/top.stderr"
check "--top names the spinning function, escaped" \
	grep -qF 'evil\x1b[31mspin' "$WORK/top.stdout"

# A thread dump on stdout, with its statistics.
bounded dump 20 200 -p "$TPID" -t threads --format dump --stats -o -
no_ctl "--format dump -o -" "$WORK/dump.stdout" "$WORK/dump.stderr"
check "the dump shows the thread names, escaped" \
	sh -c "grep -qF '\"\\x1b]0;pwned\\x07\"' '$WORK/dump.stdout' && grep -qF '\\x1b[2J\\x1b[31mEVIL' '$WORK/dump.stdout'" ||
	head -5 "$WORK/dump.stdout" | cat -v
check "the dump shows the function name, escaped" grep -qF 'evil\x1b[31mspin' "$WORK/dump.stdout"

# A folded profile, written as a file: names pass as they are meant to
# (the writers of files keep their own escaping); only the terminal side
# is checked here.
bounded folded 20 200 -p "$TPID" -t threads --format folded -o "$WORK/f.txt"
no_ctl "--format folded -o FILE: the terminal" "$WORK/folded.stdout" "$WORK/folded.stderr"

# An error naming a path with an ESC in it.
bad="$WORK/no-such-"$'\x1b'"[31mdir/out.pb.gz"
bounded err 10 200 -p "$TPID" -d 200ms -o "$bad"
check "an unwritable path is an error (exit $RC)" test "$RC" -ne 0
no_ctl "an error naming a path" "$WORK/err.stdout" "$WORK/err.stderr"
check "... naming it escaped" grep -qF 'no-such-\x1b[31mdir' "$WORK/err.stderr"

sigterm_within names-term 0.5 -p "$TPID" -t threads --format dump -o - -d 10s
no_ctl "stopped by SIGTERM" "$WORK/names-term.stdout" "$WORK/names-term.stderr"
alive names
finish
