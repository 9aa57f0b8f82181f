#!/usr/bin/env bash
# Injection (--inject, issue 30): libcprof.so loaded into a running process
# by a remote dlopen on one thread, armed, read, disarmed. The target
# (injtarget) checks everything it gets back: 8 threads allocating with a
# checksum of their blocks, and threads in epoll_wait, nanosleep, futex and
# read that count every EINTR; it must see none, through N cycles
# (CPROF_STRESS multiplies them: make stress runs 200). The heap of the
# allocations made after injection is within 15% of the truth at 64 KiB;
# a thread asleep inside malloc_info() holds the injection off until it
# leaves (and is named when the deadline is shorter); each refusal says why.
. "$(dirname "$0")/lib.sh"

scale=${CPROF_STRESS:-1}
cycles=$((20 * scale))

# report NAME: the target's counters, fresh (SIGUSR1 then its "end" line).
report() {
	ask_target "$1"
	grep '^end' "$WORK/$1.out" | tail -1
}

# clean LINE: no EINTR, no bad return, no checksum error.
clean() {
	case "$1" in *" eintr=0 bad=0 checksum_errors=0 "*) return 0 ;; esac
	return 1
}

if case_wanted refuse; then
	start_target injtarget --alloc 2
	"$ATTACH" -p "$TPID" -t heap -o "$WORK/n.pb.gz" 2>"$WORK/n.err"
	check "without --inject: refused (exit 3)" [ $? = 3 ]
	check "... with a hint naming --inject" grep -q -- "--inject" "$WORK/n.err"
	"$ATTACH" -p "$TPID" -t cpu --inject -o "$WORK/n.pb.gz" 2>"$WORK/n.err"
	check "--inject with -t cpu: a usage error" [ $? = 2 ]
	kill "$TPID"
	TARGET_ENV=()
	start_target injtarget --alloc 2 --seccomp 1
	"$ATTACH" -p "$TPID" -t heap --inject -o "$WORK/n.pb.gz" 2>"$WORK/n.err"
	rc=$?
	check "seccomp: refused (exit 3)" [ $rc = 3 ]
	check "... saying seccomp" grep -q "seccomp" "$WORK/n.err"
	check "... and nothing was loaded" sh -c "! grep -q libcprof.so /proc/$TPID/maps"
	kill "$TPID"
	"$TARGETS/stacks-static" >"$WORK/static.out" 2>&1 &
	sp=$!
	PIDS="$PIDS $sp"
	sleep 0.3
	"$ATTACH" -p "$sp" -t heap --inject -o "$WORK/n.pb.gz" 2>"$WORK/n.err"
	rc=$?
	check "static binary: refused (exit 3)" [ $rc = 3 ]
	check "... saying so" grep -q "static binary" "$WORK/n.err"
	kill "$sp"
	if [ -x "$TARGETS/gostacks" ]; then
		start_target gostacks
		"$ATTACH" -p "$TPID" -t heap --inject -o "$WORK/n.pb.gz" 2>"$WORK/n.err"
		rc=$?
		check "Go program: refused (exit 3)" [ $rc = 3 ]
		check "... saying so" grep -q "Go program" "$WORK/n.err"
		kill "$TPID"
	else
		echo "skip: gostacks not built (no Go toolchain)"
	fi
	start_target injtarget --alloc 1
	strace -f -p "$TPID" -o /dev/null 2>/dev/null &
	st=$!
	PIDS="$PIDS $st"
	sleep 0.5
	"$ATTACH" -p "$TPID" -t heap --inject -o "$WORK/n.pb.gz" 2>"$WORK/n.err"
	rc=$?
	check "already traced: refused (exit 3)" [ $rc = 3 ]
	check "... naming the tracer" grep -q "traced" "$WORK/n.err"
	kill "$st"
	wait "$st" 2>/dev/null
	kill "$TPID"
fi

if case_wanted preloaded; then
	TARGET_ENV=(LD_PRELOAD="$B/libcprof.so")
	start_target injtarget --alloc 2
	TARGET_ENV=()
	"$ATTACH" -p "$TPID" -t heap --inject -d 100ms -o "$WORK/p.pb.gz" 2>"$WORK/p.err"
	check "preloaded: --inject captures as without it" [ $? = 0 ]
	check "... saying so" grep -q "preloaded" "$WORK/p.err"
	"$ATTACH" -p "$TPID" --eject 2>"$WORK/p.err"
	check "--eject leaves a preloaded shim alone (exit 3)" [ $? = 3 ]
	kill "$TPID"
	start_target injtarget --alloc 2
	"$ATTACH" -p "$TPID" -t mutex --inject -d 1 -q -o "$WORK/p.pb.gz"
	check "mutex with --inject" [ $? = 0 ]
	"$ATTACH" -p "$TPID" -t block --inject -d 1 -q -o "$WORK/p.pb.gz"
	check "block with --inject (re-armed, no second dlopen)" [ $? = 0 ]
	"$ATTACH" -p "$TPID" --eject -q
	check "--eject of an injected shim" [ $? = 0 ]
	check "target clean" clean "$(report injtarget)"
	kill "$TPID"
fi

if case_wanted accuracy; then
	start_target injtarget --alloc 0
	"$ATTACH" -p "$TPID" -t heap --inject --inject-rate 64K -d 3 -o "$WORK/g.pb.gz" \
		2>"$WORK/g.err" &
	a=$!
	sleep 1
	kill -USR2 "$TPID"
	wait "$a"
	check "heap window with --inject" [ $? = 0 ]
	truth=$(sed -n 's/^grown //p' "$WORK/injtarget.out")
	got=$("$PBDUMP" "$WORK/g.pb.gz" | awk '/^sample .*grow_heap/ { split($2, v, ","); s += v[4] } END { print s + 0 }')
	echo "heap since injection: truth $truth, profile $got"
	check "within 15% of the truth at 64 KiB" \
		awk -v t="$truth" -v g="$got" 'BEGIN { d = g - t; if (d < 0) d = -d; exit !(t > 0 && d <= 0.15 * t) }'
	check "the profile says what it covers" sh -c "'$PBDUMP' '$WORK/g.pb.gz' | grep -q '^comment allocations since injection at'"
	kill "$TPID"
fi

if case_wanted malloc_info; then
	start_target injtarget --hold 2500
	# The thread says its tid after "ready" (under load, seen after the read).
	for _ in $(seq 1 100); do
		minfo=$(sed -n 's/^minfo //p' "$WORK/injtarget.out")
		[ -n "$minfo" ] && break
		sleep 0.05
	done
	"$ATTACH" -p "$TPID" -t heap --inject -d 100ms --inject-deadline 500ms -o "$WORK/m.pb.gz" 2>"$WORK/m.err"
	rc=$?
	check "a thread inside malloc_info: a short deadline gives up (exit 3)" [ $rc = 3 ]
	check "... naming the thread" grep -q "thread $minfo " "$WORK/m.err" || cat "$WORK/m.err"
	check "... and nothing was loaded" sh -c "! grep -q libcprof.so /proc/$TPID/maps"
	"$ATTACH" -p "$TPID" -t heap --inject -d 100ms -o "$WORK/m.pb.gz" 2>"$WORK/m.err"
	check "the default deadline waits until it leaves, then injects" [ $? = 0 ] || cat "$WORK/m.err"
	check "target clean after the wait" clean "$(report injtarget)"
	kill "$TPID"
fi

# A jemalloc-linked program with jemalloc's background thread (Debian's
# redis-server has one): that thread sleeps inside the allocator for its
# whole life, in a condition wait that released its mutex, so it must not
# hold the injection off (it did: exit 3 on every try).
if case_wanted jemalloc_bg && [ -x "$TARGETS/heapload-jemalloc" ]; then
	TARGET_ENV=(MALLOC_CONF=background_thread:true)
	start_target heapload-jemalloc
	TARGET_ENV=()
	check "jemalloc's background thread is there" sh -c "grep -l jemalloc_bg_thd /proc/$TPID/task/*/comm >/dev/null"
	"$ATTACH" -p "$TPID" -t allocs --inject --inject-rate 64K -d 1s -o "$WORK/j.pb.gz" 2>"$WORK/j.err"
	rc=$?
	check "injected beside jemalloc's background thread (exit $rc)" [ $rc = 0 ] || cat "$WORK/j.err"
	got=$("$PBDUMP" "$WORK/j.pb.gz" | awk '/^sample .*steady_alloc/ { split($2, v, ","); s += v[2] } END { print s + 0 }')
	echo "steady_alloc since injection: $got bytes (16 MiB a second)"
	check "steady_alloc's allocations are seen" [ "${got:-0}" -gt 4000000 ]
	kill "$TPID"
fi

# A process that execs during an injected capture: the shim's address is
# gone, and the disarm at the end must not call whatever the new image
# has there (a call to the stale address ran the new program's code).
if case_wanted exec; then
	bash -c 'trap "exec sleep 30" USR1; while :; do sleep 0.01; done' &
	xp=$!
	PIDS="$PIDS $xp"
	sleep 0.3
	"$ATTACH" -p "$xp" -t allocs --inject -d 2s -o "$WORK/x.pb.gz" 2>"$WORK/x.err" &
	a=$!
	for i in $(seq 1 100); do grep -q "injected into" "$WORK/x.err" && break; sleep 0.05; done
	kill -USR1 "$xp"
	wait "$a"
	rc=$?
	sleep 0.2
	check "exec during the window: the new program runs on" \
		sh -c "grep -q '^sleep' /proc/$xp/comm 2>/dev/null" || cat "$WORK/x.err"
	check "... no call into it (no disarm claimed, exit $rc)" \
		sh -c "! grep -q 'disarmed' '$WORK/x.err' && [ $rc != 0 ]"
	check "... the exec is named" grep -q "no longer in it" "$WORK/x.err"
	kill "$xp" 2>/dev/null
fi

if case_wanted cycles; then
	start_target injtarget
	fails=0
	for i in $(seq 1 "$cycles"); do
		"$ATTACH" -p "$TPID" -t heap --inject -d 100ms -q -o "$WORK/c.pb.gz" || fails=$((fails + 1))
		not_stopped "$TPID" || fail "cycle $i left a thread stopped"
	done
	check "$cycles inject/capture/eject cycles" [ "$fails" = 0 ]
	"$ATTACH" -p "$TPID" -t allocs --inject -d 1 --every 2s --count 3 -q -o "$WORK/e%n.pb.gz"
	check "--every series with --inject" [ $? = 0 ]
	r=$(report injtarget)
	echo "target: $r"
	check "0 EINTR, 0 bad returns, checksums intact" clean "$r"
	check "one libcprof.so mapping set (no second dlopen)" \
		[ "$(grep -c 'r-xp.*libcprof.so' /proc/"$TPID"/maps)" = 1 ]
	kill "$TPID"
	sleep 0.3
	check "the target exited by itself, cleanly" grep -q '^done' "$WORK/injtarget.out"
fi

if case_wanted kill; then
	# SIGKILL of the caller during a remote call: the thread finishes the
	# call by itself through __restore_rt and carries on as it was.
	start_target injtarget
	fn=$(sed -n 's/^fn //p' "$WORK/injtarget.out")
	called=""
	for name in epoll nsleep futex piperd alloc; do
		tid=""
		for t in /proc/"$TPID"/task/*; do
			[ "$(cat "$t/comm")" = "$name" ] && { tid=${t##*/}; break; }
		done
		called="$called $tid"
		"$TOOLS/remcall" "$TPID" "$tid" "$fn" 800 &
		rp=$!
		sleep 0.5
		kill -9 "$rp"
		wait "$rp" 2>/dev/null
	done
	sleep 2
	not_stopped "$TPID" || fail "a thread was left stopped"
	r=$(report injtarget)
	echo "target: $r"
	started=$(echo "$r" | sed -n 's/.* slow_started=\([0-9]*\).*/\1/p')
	check "5 callers killed, $started during the call: each call finished by itself" \
		sh -c "[ '$started' -ge 1 ] && echo '$r' | grep -q 'slow_calls=$started\$'"
	check "0 EINTR, 0 bad returns, checksums intact" clean "$r"
	# Every worker blocks the same signals; the last listed was never called.
	own=$(awk '/^SigBlk/ { print $2 }' "$(ls -d /proc/"$TPID"/task/* | tail -1)"/status)
	masks=$(for t in $called; do awk '/^SigBlk/ { print $2 }' /proc/"$TPID"/task/"$t"/status; done | sort -u)
	check "the signal masks are the threads' own again ($own)" [ "$masks" = "$own" ]
	# A call past its deadline: detached, exit 3, and it finishes by itself.
	"$TOOLS/remcall" "$TPID" "$tid" "$fn" 1000 1 200 2>"$WORK/d.err"
	check "a call past its deadline: exit 3" [ $? = 3 ]
	check "... saying it finishes by itself" grep -q "finishes by itself" "$WORK/d.err"
	sleep 1.5
	r=$(report injtarget)
	check "... and it did" sh -c "echo '$r' | grep -q 'slow_started=$((started + 1)) slow_calls=$((started + 1))\$'"
	check "... cleanly" clean "$r"
	kill "$TPID"
fi

if case_wanted killanywhere; then
	# cprof-attach --inject SIGKILLed at arbitrary moments (during the
	# dlopen, an arm, a read, a disarm): no thread left stopped, no EINTR,
	# the data intact, and the next --inject still works (a dlopen the
	# thread finished alone is found mapped and only armed).
	start_target injtarget
	for i in $(seq 1 $((10 * scale))); do
		"$ATTACH" -p "$TPID" -t heap --inject -d 1 -q -o "$WORK/k.pb.gz" 2>/dev/null &
		ap=$!
		sleep "0.0$((RANDOM % 60 + 1))"
		kill -9 "$ap" 2>/dev/null
		wait "$ap" 2>/dev/null
		not_stopped "$TPID" || fail "kill $i left a thread stopped"
	done
	"$ATTACH" -p "$TPID" -t heap --inject -d 100ms -q -o "$WORK/k.pb.gz"
	check "an injection after the killed ones works" [ $? = 0 ]
	check "one libcprof.so loaded" [ "$(grep -c 'r-xp.*libcprof.so' /proc/"$TPID"/maps)" = 1 ]
	r=$(report injtarget)
	echo "target: $r"
	check "0 EINTR, 0 bad returns, checksums intact" clean "$r"
	kill "$TPID"
fi

if case_wanted sigterm; then
	# SIGTERM mid-window: the capture ends and the shim is disarmed before
	# cprof-attach exits; SIGTERM while it waits for a thread: no call.
	start_target injtarget --alloc 2
	"$ATTACH" -p "$TPID" -t heap --inject -d 20 -o "$WORK/s.pb.gz" 2>"$WORK/s.err" &
	ap=$!
	sleep 1.5
	kill -TERM "$ap"
	wait "$ap"
	check "SIGTERM mid-window: disarmed before the exit" grep -q "disarmed" "$WORK/s.err" ||
		cat "$WORK/s.err"
	check "... target clean" clean "$(report injtarget)"
	kill "$TPID"
	start_target injtarget --alloc 2 --hold 3000
	"$ATTACH" -p "$TPID" -t heap --inject -d 1 -o "$WORK/s.pb.gz" 2>"$WORK/s.err" &
	ap=$!
	sleep 0.5
	kill -TERM "$ap"
	wait "$ap"
	check "SIGTERM while waiting for a thread: exit 8" [ $? = 8 ]
	check "... nothing loaded" sh -c "! grep -q libcprof.so /proc/$TPID/maps"
	kill "$TPID"
fi

finish
