#!/usr/bin/env bash
# sampler: both
# Multi-process services: a master whose forked workers do the work.
# 1. A CPU profile of a master that used (next to) no CPU names the workers
#    that did (its replacing a worker is a fork's worth of CPU)
#    (pid, command, share) and points at --children.
# 2. --children profiles the master and every descendant, present and born
#    during the capture, into one profile labelled pid and process: each
#    long-lived worker's share (worker_work, by pid) and the master's
#    (master_work) within 5 points of /proc's per-process truth.
# 3. --children applies to threads snapshots too, and (4) to the heap kinds.
. "$(dirname "$0")/lib.sh"

# proc_cpu PID: CPU ns of every thread of PID (0 when gone).
proc_cpu() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

start_target prefork -q 2
sleep 0.3
"$ATTACH" -p "$TPID" -d 2s -o "$WORK/idle.pb.gz" 2>"$WORK/idle.err"
rc=$?
cat "$WORK/idle.err"
w0=$(awk '$1 == "worker" && $2 == 0 { print $3 }' "$WORK/prefork.out")
check "plain attach to an idle master: exit 0 (got $rc)" [ "$rc" = 0 ]
check "it says the master used no CPU and its workers did, naming worker $w0" \
	grep -qE "used (almost )?no CPU during the capture( \([0-9.]+ ms\))?, but .* processes under it did: .*$w0 \(prefork\) [0-9]*%.*--children" "$WORK/idle.err"
kill "$TPID"

start_target prefork 2
sleep 0.3
workers() { awk '$1 == "worker" { print $3 }' "$WORK/prefork.out"; }
declare -A c0 c1
for p in $TPID $(workers); do c0[$p]=$(proc_cpu "$p"); done
"$ATTACH" -p "$TPID" -d 4s --children -o "$WORK/kids.pb.gz" 2>"$WORK/kids.err"
rc=$?
cat "$WORK/kids.err"
for p in $TPID $(workers); do c1[$p]=$(proc_cpu "$p"); done
check "--children: exit 0 (got $rc)" [ "$rc" = 0 ]
"$PBDUMP" "$WORK/kids.pb.gz" >"$WORK/kids.txt"
check "every sample labelled pid and process" \
	awk '/^sample / { n++; if ($0 !~ /pid=[0-9]+/ || $0 !~ /process=prefork/) bad++ } END { exit !(n > 0 && bad == 0) }' "$WORK/kids.txt"
# Compare over the processes alive for the whole capture (the master and
# worker 0): the exiting worker's last CPU cannot be read after its exit.
total=0
for p in "${!c1[@]}"; do
	[ -n "${c0[$p]:-}" ] && [ "${c1[$p]}" -gt 0 ] || continue
	total=$((total + c1[$p] - c0[$p]))
	whole="${whole:-} $p"
done
# share PID FUNC: FUNC's CPU in PID's samples, in % of the CPU of the whole-capture processes.
share() {
	awk -v p="$1" -v f="$2" -v whole="$whole" 'BEGIN { n = split(whole, w, " "); for (i = 1; i <= n; i++) keep[w[i]] = 1 }
		/^sample / { split($2, v, ","); match($0, /pid=[0-9]+/); q = substr($0, RSTART + 4, RLENGTH - 4)
		if (!(q in keep)) next; all += v[2]
		if (q == p && $0 ~ (";" f "(;|$)")) h += v[2] }
		END { printf "%.1f", all ? 100 * h / all : -1 }' "$WORK/kids.txt"
}
p=$(awk '$1 == "worker" && $2 == 0 { print $3 }' "$WORK/prefork.out")
truth=$(awk -v a="$((c1[$p] - c0[$p]))" -v t="$total" 'BEGIN { printf "%.1f", 100 * a / t }')
got=$(share "$p" worker_work)
echo "worker $p: profile $got% vs /proc $truth% (of the master's and its CPU)"
check "worker $p's share within 5 points of /proc" near "$got" "$truth" 5
truth=$(awk -v a="$((c1[$TPID] - c0[$TPID]))" -v t="$total" 'BEGIN { printf "%.1f", 100 * a / t }')
got=$(share "$TPID" master_work)
echo "master $TPID: profile $got% vs /proc $truth%"
check "the master's own share within 5 points of /proc" near "$got" "$truth" 5
born=$(awk '$1 == "worker" && $2 >= 2 { print $3 }' "$WORK/prefork.out" | head -1)
check "a worker forked during the capture ($born) is in the profile" grep -q "pid=${born:-none}[; ]" "$WORK/kids.txt"
check "the summary counts the processes" grep -q "in [3-9] processes" "$WORK/kids.err"

"$ATTACH" -p "$TPID" -t threads --children --format dump -o "$WORK/threads.txt" -q
check "--children threads snapshot: the workers' stacks are in it" grep -q "worker_wait\|worker_work" "$WORK/threads.txt"
# Each thread says which process it is in: the master's own thread, and every worker's.
check "--children dump: each thread names its process" \
	awk -v m="$TPID" -v ws=" $(workers | tr '\n' ' ') " '/^thread / { n++; if (!match($0, /, process [0-9]+ "/)) bad++
		p = substr($0, RSTART + 10, RLENGTH - 12); if (p == m) master++; else if (index(ws, " " p " ")) w++ }
		END { exit !(n > 0 && !bad && master > 0 && w > 0) }' "$WORK/threads.txt"
check "target left running" not_stopped "$TPID"
for p in $(workers); do [ -d /proc/"$p" ] && not_stopped "$p"; done
kill "$TPID"

# 5. perf: a descendant that execs during the capture is followed into its
# new program (ptrace families are not): the new program's samples are
# under its own name with its own functions, and none of its functions is
# under the old program's name (the exec is looked for in every ring
# before the samples are taken: samples are ordered within a ring only).
if [ "$SAMPLER" = perf ]; then
	bash -c 'sleep 0.3; (sleep 1; exec "$1") & wait' sh "$TARGETS/stacks" >/dev/null 2>&1 &
	root=$!
	PIDS="$PIDS $root"
	sleep 0.1
	"$ATTACH" -p "$root" -d 4s --children -o "$WORK/exec.pb.gz" -q
	rc=$?
	check "--children across a descendant's exec: exit 0 ($rc)" [ "$rc" = 0 ]
	kid=$(cat /proc/"$root"/task/*/children 2>/dev/null)
	"$PBDUMP" "$WORK/exec.pb.gz" | grep '^sample' >"$WORK/exec.txt"
	fns='(main_spin|cmp_slow|recurse_bottom|deep_bottom|signal_victim|handler_spin)'
	# Samples (counts), not distinct stacks: on a loaded machine the new
	# program gets a few CPU slices, each sample landing on a stack seen.
	new=$(grep -E "process=stacks;.* stack .*$fns" "$WORK/exec.txt" |
		awk '{ split($2, v, ","); n += v[1] } END { print n + 0 }')
	# Threads only the new program has, or its functions, under the old name.
	old=$(grep -E "process=(sh|bash)" "$WORK/exec.txt" |
		grep -cE "thread=(deep|qsorter|recurser|signaller)|stack .*$fns")
	echo "after the exec: $new samples of its functions under process=stacks, $old stacks under the old name"
	check "the exec'd program's samples are its own" [ "$new" -ge 10 ]
	check "none of them under the program it replaced" [ "$old" = 0 ]
	for p in $kid; do kill -9 "$p" 2>/dev/null; done
	kill -9 "$root" 2>/dev/null
fi

# 4. The heap kinds read every process's segment into one profile: a
# master holding 400 KiB (inherited by each worker at fork) and workers
# holding 400 and 800 KiB of their own, every allocation sampled.
TARGET_ENV=(LD_PRELOAD="$B/libcprof.so" CPROF_SAMPLE_RATE=1)
start_target prefork -q -m 400 2
TARGET_ENV=()
# Each worker says so once it holds its blocks: a fixed wait was short
# once under load (worker 1 had allocated nothing yet).
for i in $(seq 1 200); do
	[ "$(grep -c '^worker [01] ' "$WORK/prefork.out")" -ge 2 ] && break
	sleep 0.05
done
"$ATTACH" -p "$TPID" -t heap --children -o "$WORK/heap.pb.gz" 2>"$WORK/heap.err"
rc=$?
cat "$WORK/heap.err"
check "--children heap: exit 0 (got $rc)" [ "$rc" = 0 ]
"$PBDUMP" "$WORK/heap.pb.gz" >"$WORK/heap.txt"
# held PID FUNC: inuse KiB in PID's samples whose stack has FUNC.
held() {
	awk -v p="$1" -v f="$2" '/^sample / { split($2, v, ","); if ($0 ~ ("pid=" p "[; ]") && $0 ~ (";" f "(;|$)")) s += v[4] }
		END { printf "%.0f", s / 1024 }' "$WORK/heap.txt"
}
w0=$(awk '$1 == "worker" && $2 == 0 { print $3 }' "$WORK/prefork.out")
w1=$(awk '$1 == "worker" && $2 == 1 { print $3 }' "$WORK/prefork.out")
echo "heap: master $(held "$TPID" master_hold) KiB in master_hold; worker $w0 $(held "$w0" worker_hold) KiB own, $(held "$w0" master_hold) inherited; worker $w1 $(held "$w1" worker_hold) KiB own"
check "the master's 400 KiB, labelled with its pid" near "$(held "$TPID" master_hold)" 400 20
check "worker $w0's own 400 KiB, labelled with its pid" near "$(held "$w0" worker_hold)" 400 20
check "worker $w1's own 800 KiB, labelled with its pid" near "$(held "$w1" worker_hold)" 800 40
check "worker $w0's 400 KiB inherited from the master at fork" near "$(held "$w0" master_hold)" 400 20
check "every heap sample labelled pid and process" \
	awk '/^sample / { n++; if ($0 !~ /pid=[0-9]+/ || $0 !~ /process=prefork/) bad++ } END { exit !(n > 0 && bad == 0) }' "$WORK/heap.txt"
"$ATTACH" -p "$TPID" -t heap --children -d 1s -o "$WORK/heapd.pb.gz" -q 2>"$WORK/heapd.err"
rc=$?
check "--children heap over a window: exit 0 (got $rc)" [ "$rc" = 0 ]
"$ATTACH" -p "$TPID" -t heap -o "$WORK/heap1.pb.gz" -q
"$PBDUMP" "$WORK/heap1.pb.gz" >"$WORK/heap1.txt"
check "without --children only the master's heap" sh -c "! grep -q worker_hold '$WORK/heap1.txt'"
finish
