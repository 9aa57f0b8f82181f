#!/usr/bin/env bash
# cprof-attach top (issue 29): a live view of the hottest functions.
# Not a terminal: one plain-text block per interval, --count N of them,
# the hot function at the top of each, no escape byte (not even from a
# target whose names are escape sequences); a reader gone ends it. On a
# terminal (tmux, 80x24): the header and the hot function on screen,
# drawn again at a new size; s and t change the sort column, a the span,
# p pauses (PAUSED, and the interval count stands still) and resumes,
# f TID shows one thread, q quits with exit 0 and the terminal's settings
# as they were; SIGTERM does the same. The target is left running after
# each, and after a SIGKILL of a ptrace top too; a target that exits ends
# top with exit 5, paused too; an error while the screen is up is printed
# after it. Every wait for something to appear is a bounded poll; the one
# fixed wait is the 1.5 s in which a paused top must take no interval
# (an absence cannot be polled for).
. "$(dirname "$0")/lib.sh"

# The server's socket in the work directory: gone with it, whatever happens.
SOCK=$WORK/tmux.sock
tmx() { tmux -S "$SOCK" -f /dev/null "$@"; }
# tmx_kill: end the tmux server and wait for it to be gone: the next
# new-session found it still exiting once ("server exited unexpectedly").
tmx_kill() {
	local p i
	p=$(tmx display-message -p '#{pid}' 2>/dev/null)
	tmx kill-server 2>/dev/null
	[ -n "$p" ] || return 0
	for i in $(seq 1 100); do
		kill -0 "$p" 2>/dev/null || return 0
		sleep 0.05
	done
}
trap 'tmx kill-server 2>/dev/null; cleanup' EXIT

# until_true TRIES CMD...: run CMD every 0.1 s until it succeeds, at most TRIES times.
until_true() {
	local n=$1 i
	shift
	for i in $(seq 1 "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# The pane's text now, into $WORK/pane.
pane() { tmx capture-pane -p -t top >"$WORK/pane" 2>/dev/null; }
# pane_has REGEX: the pane shows it (egrep).
pane_has() { pane && grep -qE -- "$1" "$WORK/pane"; }
# The interval number in the pane's header.
pane_interval() { pane && sed -n 's/^interval \([0-9]*\):.*/\1/p' "$WORK/pane" | head -1; }

start_target ticker
TICKER=$TPID
WORKER=$(awk '$2 == "worker" { print $1 }' <(for t in /proc/"$TPID"/task/*; do echo "${t##*/} $(cat "$t"/comm)"; done))

if case_wanted text; then
	"$ATTACH" top -p "$TPID" --count 3 --interval 500ms >"$WORK/text" 2>"$WORK/text.err"
	rc=$?
	check "top --count 3 to a file exits 0 ($rc): $(head -c 300 "$WORK/text.err")" [ "$rc" = 0 ]
	n=$(grep -c "^pid $TPID (ticker)" "$WORK/text")
	check "3 blocks, one per interval ($n)" [ "$n" = 3 ]
	# The first function line of each block (the line after the column titles).
	awk '/^  last / { getline; print $NF }' "$WORK/text" >"$WORK/firsts"
	check "work_loop heads each block by self: $(tr '\n' ' ' <"$WORK/firsts")" \
		sh -c "[ \$(grep -c '^work_loop$' '$WORK/firsts') = 3 ]"
	check "the worker thread is listed" grep -qE "^ +$WORKER worker " "$WORK/text"
	check "no escape or other control byte in the text" \
		sh -c "! LC_ALL=C grep -q '[[:cntrl:]]' '$WORK/text'"
	check "target left running" not_stopped "$TPID"
	# A reader that stops reading ends top, as q does (timeout: a top that runs on fails).
	timeout 60 "$ATTACH" top -p "$TPID" --interval 300ms -q | head -3 >"$WORK/head"
	rc=${PIPESTATUS[0]}
	check "top | head -3 ends top, exit 0 ($rc)" [ "$rc" = 0 ]
	"$ATTACH" top -p "$TPID" -t threads --count 1 2>"$WORK/thr.err"
	rc=$?
	check "top refuses a one-snapshot type, exit 2 ($rc): $(cat "$WORK/thr.err")" \
		sh -c "[ $rc = 2 ] && grep -q 'threads is one snapshot' '$WORK/thr.err'"
	"$ATTACH" top -p "$TPID" -d 5s 2>"$WORK/d.err"
	check "top refuses -d: $(cat "$WORK/d.err")" grep -q 'top does not take --duration' "$WORK/d.err"
fi

if case_wanted hostile; then
	start_target hostile_trust_names
	HPID=$TPID
	TPID=$TICKER
	"$ATTACH" top -p "$HPID" --count 2 --interval 500ms >"$WORK/evil" 2>"$WORK/evil.err"
	rc=$?
	check "top of a target with hostile names exits 0 ($rc)" [ "$rc" = 0 ]
	check "its escape sequences are shown escaped: $(grep -m1 -a evil "$WORK/evil")" \
		grep -qF 'evil\x1b[31mspin' "$WORK/evil"
	check "and never written raw (no control byte in the output)" \
		sh -c "! LC_ALL=C grep -q '[[:cntrl:]]' '$WORK/evil'"
	check "hostile target left running" not_stopped "$HPID"
fi

if case_wanted keys; then
	# The pane: a shell script that notes the terminal's settings, runs
	# top on the terminal, notes its exit status and the settings again.
	cat >"$WORK/pane.sh" <<EOF
stty -a >"$WORK/stty.before"
"$ATTACH" top -p $TPID --interval 500ms </dev/tty &
echo \$! >"$WORK/top.pid"
wait \$!
echo \$? >"$WORK/top.rc"
stty -a >"$WORK/stty.after"
echo "shell after top"
exec sleep 600
EOF
	tmx new-session -d -s top -x 80 -y 24 "sh $WORK/pane.sh"
	check "the screen shows the header" until_true 300 pane_has "^pid $TPID \\(ticker\\) +cpu .*\\[sort self, last\\]"
	check "and the hot function" until_true 100 pane_has "^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +work_loop"
	check "and the column sorted by, SELF% of the last interval" pane_has "^  last SELF% +total% +start self% +total%"
	check "80x24: no line wider than 80" sh -c "! awk 'length > 80' '$WORK/pane' | grep -q ."
	tmx resize-window -t top -x 100 -y 30
	check "a resized terminal is drawn at its size (the keys on row 30)" \
		until_true 50 sh -c "tmux -S '$SOCK' capture-pane -p -t top | sed -n 30p | grep -q '^keys:'"
	tmx resize-window -t top -x 80 -y 24
	check "  and back at 80x24 (row 24)" \
		until_true 50 sh -c "tmux -S '$SOCK' capture-pane -p -t top | sed -n 24p | grep -q '^keys:'"
	tmx send-keys -t top t
	check "t sorts by total" until_true 50 pane_has "\\[sort total, last\\]"
	check "  (TOTAL% in capitals)" pane_has "^  last self% +TOTAL% +start self% +total%"
	tmx send-keys -t top a
	check "a sorts by the span since the start" until_true 50 pane_has "\\[sort total, start\\]"
	tmx send-keys -t top s
	check "s sorts by self again" until_true 50 pane_has "\\[sort self, start\\]"
	tmx send-keys -t top f
	check "f asks for a thread" until_true 50 pane_has "^thread id to show"
	tmx send-keys -t top "$WORKER" Enter
	check "f $WORKER shows that thread's functions" until_true 50 pane_has "^functions of thread $WORKER:"
	check "  and marks it in the threads" pane_has "^> +$WORKER worker"
	tmx send-keys -t top f Enter
	check "f and an empty line shows every thread again" \
		until_true 50 sh -c "tmux -S '$SOCK' capture-pane -p -t top | grep -q '^keys:' && ! tmux -S '$SOCK' capture-pane -p -t top | grep -q '^functions of thread'"
	tmx send-keys -t top p
	check "p pauses" until_true 50 pane_has "PAUSED"
	i0=$(pane_interval)
	# While paused no interval is taken: three intervals' time later, the count stands.
	check "no interval while paused" \
		sh -c "t=\$(date +%s%N); while [ \$(( (\$(date +%s%N) - t) / 1000000 )) -lt 1500 ]; do sleep 0.1; done"
	i1=$(pane_interval)
	check "  the interval count stands still ($i0, then $i1)" [ "$i0" = "$i1" ]
	tmx send-keys -t top p
	check "p again resumes" until_true 100 sh -c "i=\$(tmux -S '$SOCK' capture-pane -p -t top | sed -n 's/^interval \\([0-9]*\\):.*/\\1/p'); [ -n \"\$i\" ] && [ \"\$i\" -gt '$i1' ]"
	check "  and PAUSED is gone" sh -c "! tmux -S '$SOCK' capture-pane -p -t top | grep -q PAUSED"
	tmx send-keys -t top q
	check "q quits" until_true 100 test -s "$WORK/top.rc"
	check "  with exit 0 ($(cat "$WORK/top.rc" 2>/dev/null))" [ "$(cat "$WORK/top.rc" 2>/dev/null)" = 0 ]
	until_true 50 test -s "$WORK/stty.after"
	check "the terminal's settings are as before top" cmp -s "$WORK/stty.before" "$WORK/stty.after"
	check "  and the screen is the shell's again" until_true 50 pane_has "^shell after top"
	check "  (the view is gone with its alternate screen)" sh -c "! grep -q '^keys:' '$WORK/pane'"
	check "target left running after q" not_stopped "$TPID"
	tmx_kill

	# SIGTERM: the same way out.
	rm -f "$WORK/top.rc" "$WORK/stty.after" "$WORK/top.pid"
	tmx new-session -d -s top -x 80 -y 24 "sh $WORK/pane.sh"
	check "top is up again" until_true 300 pane_has "^pid $TPID \\(ticker\\)"
	kill -TERM "$(cat "$WORK/top.pid")"
	check "SIGTERM ends top" until_true 100 test -s "$WORK/top.rc"
	check "  with exit 0 ($(cat "$WORK/top.rc" 2>/dev/null))" [ "$(cat "$WORK/top.rc" 2>/dev/null)" = 0 ]
	until_true 50 test -s "$WORK/stty.after"
	check "  and the terminal's settings as before" cmp -s "$WORK/stty.before" "$WORK/stty.after"
	check "target left running after SIGTERM" not_stopped "$TPID"
	tmx_kill
fi

if case_wanted held; then
	# An error while the screen is up is not lost with it: printed once the terminal is back.
	cat >"$WORK/heap.sh" <<EOF
"$ATTACH" top -p $TPID -t heap </dev/tty
echo "top exited \$?"
exec sleep 600
EOF
	tmx new-session -d -s top -x 80 -y 24 "sh $WORK/heap.sh"
	check "top -t heap of a target without the shim exits 3" until_true 300 pane_has "^top exited 3"
	check "  and its error is on the terminal after the view" pane_has "libcprof.so is not"
	tmx_kill
fi

if case_wanted gone; then
	# A target that exits: top says so and ends, 5 after intervals were shown (4 before).
	start_target ticker -t 3
	SHORT=$TPID
	TPID=$TICKER
	"$ATTACH" top -p "$SHORT" --interval 300ms >"$WORK/gone" 2>"$WORK/gone.err"
	rc=$?
	n=$(grep -c "^pid $SHORT " "$WORK/gone")
	check "top ends when its target exits, exit 5 after $n intervals, 4 before ($rc): $(tail -1 "$WORK/gone.err")" \
		sh -c "{ [ $rc = 5 ] && [ $n -gt 0 ]; } || { [ $rc = 4 ] && [ $n = 0 ]; }"
	check "  and says so: $(cat "$WORK/gone.err" | tr "\n" " ")" grep -q "^cprof-attach: $SHORT (ticker) exited; top ends after $n intervals" "$WORK/gone.err"
fi

if case_wanted pausedgone; then
	# The target ends while top is paused: top ends too, whether its parent
	# (this shell) has reaped it yet or it is still a zombie.
	start_target ticker
	SHORT=$TPID
	TPID=$TICKER
	cat >"$WORK/pg.sh" <<EOF
"$ATTACH" top -p $SHORT </dev/tty
echo "top exited \$?"
exec sleep 600
EOF
	tmx new-session -d -s top -x 80 -y 24 "sh $WORK/pg.sh"
	check "top is up" until_true 300 pane_has "^pid $SHORT \\(ticker\\)"
	tmx send-keys -t top p
	check "and paused" until_true 100 pane_has "PAUSED"
	kill -9 "$SHORT"
	check "a target killed while top is paused ends top, exit 5" until_true 100 pane_has "^top exited 5"
	check "  and top says so" pane_has "^cprof-attach: $SHORT \\(ticker\\) exited; top ends"
	tmx_kill
fi

if case_wanted kill; then
	# SIGKILL in the middle of a ptrace interval: the kernel detaches.
	"$ATTACH" top -p "$TPID" --sampler ptrace --interval 2s >"$WORK/k.txt" 2>&1 &
	kpid=$!
	PIDS="$PIDS $kpid"
	check "a ptrace top shows a block" until_true 300 grep -q '^  last ' "$WORK/k.txt"
	# The next interval's capture is under way: it samples from the start to the end.
	kill -9 "$kpid"
	wait "$kpid" 2>/dev/null
	check "target left running after SIGKILL of top" until_true 50 not_stopped "$TPID"
fi
finish
