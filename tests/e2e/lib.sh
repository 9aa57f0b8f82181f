# lib.sh — shared helpers for the end-to-end tests, sourced by each t_*.sh.
#
# Each test starts the project's own target programs, runs cprof-attach on
# them and checks the profile (with go tool pprof, the real consumer, and
# build/tests/tools/pbdump for exact values). Every process a test starts
# is killed on exit, whatever happens.

set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${CPROF_BUILD:-$TOP/build}
ATTACH=$B/cprof-attach
PBDUMP=$B/tests/tools/pbdump
TOOLS=$B/tests/tools
TARGETS=$B/tests/targets
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cprof-e2e.XXXXXX")
PIDS=""
FAILED=0
TARGET_ENV=()
export GOCACHE=${GOCACHE:-$WORK/gocache} GOFLAGS=-mod=mod HOME=${HOME:-$WORK}
# The cache of source lines (unwind/linecache.h) starts empty for each
# test and never touches the user's own.
export XDG_CACHE_HOME=$WORK/xdg-cache

# CPROF_SANITIZED=1 (make check SANITIZE=...): cprof-attach runs under
# ASan/UBSan, several times slower per stop; an accuracy check whose error
# grows with the tracer's own latency may allow more (and says so).
SANITIZED=${CPROF_SANITIZED:-0}

# CPROF_TEST_SAMPLER=perf|ptrace (set by the runner for tests marked
# "# sampler: both" or "# sampler: ptrace"): every cpu capture takes
# --sampler with it. $ATTACH is then a wrapper that execs cprof-attach (the
# pid stays the same), adding the option where the type is cpu.
SAMPLER=${CPROF_TEST_SAMPLER:-}
if [ -n "$SAMPLER" ]; then
	REAL_ATTACH=$ATTACH
	ATTACH=$WORK/cprof-attach
	cat >"$ATTACH" <<WRAP
#!/usr/bin/env bash
t=cpu prev=
for a in "\$@"; do
	case "\$prev" in -t | --type) t=\$a ;; esac
	case "\$a" in --type=*) t=\${a#--type=} ;; --sampler* | -h | --help | -V) t=given ;; esac
	prev=\$a
done
[ "\$t" = cpu ] && exec "$REAL_ATTACH" --sampler $SAMPLER "\$@"
exec "$REAL_ATTACH" "\$@"
WRAP
	chmod +x "$ATTACH"
fi

cleanup() {
	local p
	for p in $PIDS; do
		kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	# CPROF_KEEP_WORK=1 keeps a failed test's files, to read a flake.
	if [ "$FAILED" != 0 ] && [ -n "${CPROF_KEEP_WORK:-}" ]; then
		echo "kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	FAILED=1
}

pass() {
	echo "ok: $*"
}

# check COND-DESCRIPTION COMMAND... : run the command, pass or fail; its
# status is the command's, so "check ... || explain" explains a failure.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; return 1; fi
}

# start_target NAME [ARGS...]: start a target, wait for its "ready" line,
# set TPID. Variables in the array TARGET_ENV (VAR=VALUE) are set for the
# target alone. The target's stdout goes to $WORK/NAME.out.
start_target() {
	local name=$1 i
	shift
	# The redirection truncates in the child, after fork: a stale "ready"
	# from an earlier target of the same name must not be there to see.
	rm -f "$WORK/$name.out"
	env "${TARGET_ENV[@]}" "$TARGETS/$name" "$@" >"$WORK/$name.out" 2>&1 &
	TPID=$!
	PIDS="$PIDS $TPID"
	for i in $(seq 1 200); do
		grep -q '^ready' "$WORK/$name.out" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "target $name did not start" >&2
	exit 1
}

# ask_target NAME: send the target SIGUSR1 (again every 0.5 s) until its
# output ($WORK/NAME.out) has one more "end" line: a fresh report.
ask_target() {
	local out=$WORK/$1.out n0 i
	n0=$(grep -c '^end' "$out")
	for i in $(seq 1 40); do
		[ $((i % 10)) = 1 ] && kill -USR1 "$TPID"
		sleep 0.05
		[ "$(grep -c '^end' "$out")" -gt "$n0" ] && break
	done
}

# wait_done NAME: wait (up to 10 s) for a "done" line in the target's output.
wait_done() {
	local i
	for i in $(seq 1 200); do
		grep -q '^done' "$WORK/$1.out" && return 0
		sleep 0.05
	done
	echo "target $1 did not finish" >&2
	exit 1
}

# run_locks NAME ARGS...: start the contention target NAME (locks,
# locks_cxx) under the shim at CPROF_BLOCK_RATE=10us and
# CPROF_MUTEX_FRACTION=10 for 4 s, and wait for its "done".
run_locks() {
	local name=$1
	shift
	TARGET_ENV=(LD_PRELOAD="$B/libcprof.so" CPROF_BLOCK_RATE=10us CPROF_MUTEX_FRACTION=10)
	start_target "$name" -s 4 "$@"
	TARGET_ENV=()
	wait_done "$name"
}

# task_cpu PID COMM: sum of schedstat CPU ns of PID's threads named COMM.
task_cpu() {
	local pid=$1 comm=$2 t sum=0 c
	for t in /proc/"$pid"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "$comm" ] || continue
		c=$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null) || continue
		sum=$((sum + c))
	done
	echo "$sum"
}

# cpu_by_comm PID: "COMM NS" per thread name and "all NS", read in one pass
# (one reader, so the window is the same for every thread, even under load).
cpu_by_comm() {
	awk 'FILENAME ~ /comm$/ { split(FILENAME, p, "/"); c[p[5]] = $0; next }
		{ split(FILENAME, p, "/"); n[c[p[5]]] += $1; all += $1 }
		END { for (k in n) printf "%s %.0f\n", k, n[k]; printf "all %.0f\n", all }' \
		/proc/"$1"/task/*/comm /proc/"$1"/task/*/schedstat
}

# total_cpu PID: schedstat CPU ns of all of PID's threads.
total_cpu() {
	local pid=$1 t sum=0 c
	for t in /proc/"$pid"/task/*; do
		c=$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null) || continue
		sum=$((sum + c))
	done
	echo "$sum"
}

# pprof_cum FILE FUNC: FUNC's cum% in go tool pprof -top -cum (0 if absent).
pprof_cum() {
	go tool pprof -top -cum -nodecount=1000 -symbolize=none "$1" 2>/dev/null |
		awk -v f="$2" '$6 == f { sub("%", "", $5); print $5; found = 1; exit }
			END { if (!found) print 0 }'
}

# check_cpu_total PROFILE STATS A0 A1 W0 W1 TOL: the profile's CPU total
# against the process's CPU, two ways. Exactly, within TOL percent of the
# process clock cprof-attach read at its window's ends (--stats: both
# samplers print it): nothing dropped or counted twice. And against /proc
# read by this script around the whole run (A0..A1 ns over W0..W1 ns of
# wall time): at most that total (the window is inside it), and at least
# 80% of it scaled to the window's share of the run. The scaled figure
# alone assumes the CPU rate was even over the run, which a loaded machine
# breaks (CI's runs missed 5% that way with nothing wrong).
check_cpu_total() {
	local prof=$1 stats=$2 a0=$3 a1=$4 w0=$5 w1=$6 tol=$7 total got clock dur scaled
	# -unit=ms: pprof otherwise scales to the smallest sample's unit (CI's
	# profile had a sample of a few us: "Total samples = 9838529.34us").
	total=$(go tool pprof -top -unit=ms -symbolize=none "$prof" 2>/dev/null |
		awk '/Total samples =/ { v = $0; sub(/.*Total samples = /, "", v); sub(/ .*/, "", v); print v }')
	got=$(awk -v v="$total" 'BEGIN { if (v ~ /^[0-9.]+ms$/) { sub(/ms/, "", v); print v } else print -1 }')
	clock=$(sed -n "s/.*the process's clock \([0-9.]*\)ms.*/\1/p; s/.* of the process's \([0-9.]*\)ms.*/\1/p" "$stats" | head -1)
	dur=$("$PBDUMP" "$prof" | awk '/^duration_nanos/ { print $2 }')
	scaled=$(awk -v c="$((a1 - a0))" -v d="$dur" -v w="$((w1 - w0))" 'BEGIN { printf "%d", c / 1e6 * d / w }')
	echo "profile total ${got}ms; the process clock over the window ${clock:-?}ms; /proc over the run $(((a1 - a0) / 1000000))ms, scaled to the window ${scaled}ms"
	check "profile total within $tol% of the process clock over its window" \
		near "$got" "${clock:--1}" "$(awk -v t="${clock:-0}" -v p="$tol" 'BEGIN { print t * p / 100 }')"
	check "profile total at most /proc's over the whole run" \
		awk -v g="$got" -v a="$(((a1 - a0) / 1000000))" 'BEGIN { exit !(g <= a * 1.02 + 5) }'
	check "profile total at least 80% of /proc's scaled to the window" \
		awk -v g="$got" -v s="$scaled" 'BEGIN { exit !(g >= 0.8 * s) }'
}

# pprof_flat FILE FUNC: FUNC's flat% (0 if absent).
pprof_flat() {
	go tool pprof -top -nodecount=1000 -symbolize=none "$1" 2>/dev/null |
		awk -v f="$2" '$6 == f { sub("%", "", $2); print $2; found = 1; exit }
			END { if (!found) print 0 }'
}

# near A B TOL: |A - B| <= TOL (floating point).
near() {
	awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'
}

# below A B: A < B (floating point).
below() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'
}

# thread_state PID: the State letter of every thread, e.g. "SRRS".
thread_states() {
	local t s=""
	for t in /proc/"$1"/task/*; do
		s="$s$(awk '/^State:/ { print $2 }' "$t/status" 2>/dev/null)"
	done
	echo "$s"
}

# wait_napping PID OUT: tests/targets/lines (PID) has said "ready" in OUT and
# its napper thread sleeps in nap(): "ready" comes before the thread runs
# (under load, a snapshot then found it in clone3). At most 10 s.
wait_napping() {
	local i t
	for i in $(seq 1 200); do
		if grep -q '^ready' "$2" 2>/dev/null; then
			for t in /proc/"$1"/task/*; do
				[ "$(cat "$t/comm" 2>/dev/null)" = napper ] &&
					[ "$(awk '/^State:/ { print $2 }' "$t/status" 2>/dev/null)" = S ] && return 0
			done
		fi
		sleep 0.05
	done
	return 1
}

# stop_all PID: SIGSTOP, then wait (at most 10 s) until every thread is
# in its group stop: a thread spinning in user code stops only at its
# next kernel entry (on CI's guests, the next tick).
stop_all() {
	local i
	kill -STOP "$1"
	for i in $(seq 1 200); do
		case "$(thread_states "$1")" in *[!T]*) sleep 0.05 ;; "") return 1 ;; *) return 0 ;; esac
	done
	return 1
}

# not_stopped PID: no thread of PID is stopped or traced, and no tracer.
not_stopped() {
	local st tracer
	st=$(thread_states "$1")
	tracer=$(awk '/^TracerPid:/ { print $2 }' /proc/"$1"/status)
	case "$st" in *t* | *T*) echo "thread states: $st" >&2; return 1 ;; esac
	[ "$tracer" = 0 ] || { echo "TracerPid $tracer" >&2; return 1; }
}

# case_wanted NAME: whether a test's case NAME runs; CPROF_TEST_CASES
# (space-separated names) runs only those, to repeat a flake's case.
case_wanted() {
	[ -z "${CPROF_TEST_CASES:-}" ] && return 0
	case " ${CPROF_TEST_CASES:-} " in *" $1 "*) return 0 ;; esac
	return 1
}

finish() {
	exit $FAILED
}

# ticks FILE: the last "tick ROUNDS EINTRS" line's rounds and eintrs.
last_tick() {
	grep '^tick' "$1" | tail -1
}

# task_sched PID COMM: "CPU_NS RUNQUEUE_NS" summed over PID's threads named COMM.
task_sched() {
	local pid=$1 comm=$2 t c=0 d=0 a b
	for t in /proc/"$pid"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "$comm" ] || continue
		read -r a b _ <"$t/schedstat" || continue
		c=$((c + a))
		d=$((d + b))
	done
	echo "$c $d"
}

# clocks_at LOG TIME_NS FILE: from clocklog's LOG, the block read nearest
# TIME_NS, as "TIME_NS" then "COMM TID CPU_NS RUNQUEUE_NS" per thread.
clocks_at() {
	awk -v t="$2" '
		$1 == "T" { d = $2 - t; if (d < 0) d = -d; cur = $2; if (best == "" || d < bd) { best = cur; bd = d } next }
		$1 == "C" { blk[cur] = blk[cur] $2 " " $3 " " $4 " " $5 "\n" }
		END { printf "%s\n%s", best, blk[best] }' "$1" >"$3"
}
