#!/usr/bin/env bash
# Kernel frames in CPU profiles (issue 28, part 1). As root, the perf
# sampler also takes each sample's kernel call chain and names it from
# /proc/kallsyms: the kwork target's pipe writer, pipe reader and
# fdatasync loop show their kernel work below write, read and fdatasync
# (vfs_write, a pipe read, a sync of the file), in the mapping
# [kernel.kallsyms]. What no tick sees (the switch around each wait,
# with interrupts off) stays an estimate under "[kernel: switching ...]",
# a frame of its own with no kernel frames under it: scaled over the
# samples instead it read an event loop's handler 13-24 points high
# (t_cpu_evloop). The kernel share of each thread's sampled stacks (the
# estimate apart, as perf has no tick there either) is held against perf
# record -g on the same window, where perf is
# installed, with perf in the mode cprof's events use (CPU-wide as root:
# -a, one cpu-clock per CPU, filtered to the target's threads): there the
# two read the same ticks. The mode matters more than the tool on this
# PVM guest (2026-11-27, kwork, 3 s): perf -a read the writer 77.5% and
# the reader 73.4% kernel, perf -p (per-task clocks) 87.2% and 94.9%, and
# the threads' own utime/stime said 72.8% and 71.5%: a CPU-wide tick that
# comes while interrupts are off lands where they come on again, often in
# user code just after the call returns. Both sample at 997 Hz for 4 s
# (at 200 Hz for 3 s the ticks aliased with the pipe's ping-pong and the
# two read 11 points apart once in 24). 14 quiet runs, 42 draws: sd 1.7
# points, worst 3.8 (the issue's 5 points); beside two busy loops the
# reader, often preempted, read +6.4 and -5.8 in 12 draws. The bar is 10
# points, for a loaded CI machine.
# --no-kernel has no kernel frames, and an unprivileged user at
# perf_event_paranoid 2 gets none and no error.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
	echo "not root: kernel call chains are not tested"
	finish
fi
# A file on a disk (a tmpfs has nothing to sync): /var/tmp, else the work directory.
dat=$(mktemp -p /var/tmp cprof-kwork.XXXXXX 2>/dev/null || echo "$WORK/kwork.dat")
start_target kwork "$dat"
tp=$TPID

# kshare FILE THREAD: the share of THREAD's sampled weight (the switching
# estimate apart) whose stack enters the kernel.
kshare() {
	"$PBDUMP" "$1" | awk -v t="$2" '/^sample / && $0 ~ ("thread=" t "[; ]") && !/kernel: switching/ {
		split($2, v, ","); all += v[2]
		if ($0 ~ /;(entry_SYSCALL_64[a-z_]*|asm_[a-z_]+);/) k += v[2] }
		END { if (all) printf "%.1f", 100 * k / all; else print -1 }'
}

perfok=0
if command -v perf >/dev/null; then
	perf record -g -F 997 -e cpu-clock -a -o "$WORK/kw.perf" -- sleep 4 >/dev/null 2>&1 &
	perfpid=$!
	perfok=1
fi
"$ATTACH" -p "$tp" -d 4s -F 997 --sampler perf -o "$WORK/k.pb.gz" -q --summary json >"$WORK/k.json"
rc=$?
check "exit 0 ($rc)" [ "$rc" = 0 ]
ks=$(sed -n 's/.*"kernel_stacks":\([0-9]*\).*/\1/p' "$WORK/k.json")
check "--summary json counts the samples with kernel frames (${ks:-none})" [ "${ks:-0}" -gt 100 ]
[ "$perfok" = 1 ] && wait "$perfpid"
"$PBDUMP" "$WORK/k.pb.gz" >"$WORK/k.txt"
check "the writer's kernel frames go down from write to vfs_write" \
	grep -qE ';pipe_writer;write;(.*;)?entry_SYSCALL_64[a-z_]*;(.*;)?vfs_write(;|$)' "$WORK/k.txt"
check "the reader's go down from read to a pipe read" \
	grep -qE ';pipe_reader;read;.*;vfs_read;.*pipe_read' "$WORK/k.txt"
check "the syncer's go down from fdatasync into the kernel" \
	grep -qE ';file_syncer;fdatasync;(.*;)?entry_SYSCALL_64[a-z_]*;.*sync' "$WORK/k.txt"
check "kernel frames are in the [kernel.kallsyms] mapping" grep -q 'kernel.kallsyms' "$WORK/k.txt"
check "the switching estimate is a frame of its own, no kernel frame under it" \
	sh -c "! grep 'kernel: switching' '$WORK/k.txt' | grep -qE 'entry_SYSCALL|kallsyms|asm_'"
if [ "$perfok" = 1 ] && [ -s "$WORK/kw.perf" ]; then
	perf script -i "$WORK/kw.perf" -F comm,tid,ip 2>/dev/null | awk '
		/^ *[a-z]+ +[0-9]+ *$/ { if (n) { all[c]++; if (first ~ /^ffff/) k[c]++ } c = $1; n = 0; next }
		NF == 0 { next }
		{ if (!n) first = $1; n++ }
		END { if (n) { all[c]++; if (first ~ /^ffff/) k[c]++ }
		      for (x in all) printf "%s %.1f %d\n", x, 100 * k[x] / all[x], all[x] }' >"$WORK/perf.share"
	for t in writer reader syncer; do
		got=$(kshare "$WORK/k.pb.gz" "$t")
		want=$(awk -v t="$t" '$1 == t { print $2 }' "$WORK/perf.share")
		echo "$t: kernel share $got% (perf record -g -a: ${want:-?}%)"
		[ -n "$want" ] && check "$t: kernel share within 10 points of perf -a's ($got% vs $want%)" \
			near "$got" "$want" 10
	done
else
	for t in writer reader syncer; do
		got=$(kshare "$WORK/k.pb.gz" "$t")
		check "$t: most of its CPU in the kernel ($got%; perf not installed)" below 50 "$got"
	done
fi

"$ATTACH" -p "$tp" -d 1s --sampler perf --no-kernel -o "$WORK/nk.pb.gz" -q
check "--no-kernel: no kernel frames" sh -c "! '$PBDUMP' '$WORK/nk.pb.gz' | grep -q 'kernel.kallsyms'"
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 9)
if command -v setpriv >/dev/null && [ "$paranoid" = 2 ]; then
	chmod 777 "$WORK"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TARGETS/kwork" >"$WORK/u.out" 2>&1 &
	up=$!
	PIDS="$PIDS $up"
	sleep 0.5
	setpriv --reuid=65534 --regid=65534 --clear-groups "${REAL_ATTACH:-$ATTACH}" -p "$up" -d 1s \
		-o "$WORK/u.pb.gz" 2>"$WORK/u.err"
	rc=$?
	check "unprivileged: exit 0 ($rc), no error" sh -c "[ $rc = 0 ] && ! grep -q error '$WORK/u.err'"
	check "unprivileged: no kernel frames" sh -c "! '$PBDUMP' '$WORK/u.pb.gz' | grep -q 'kernel.kallsyms'"
	kill "$up"
fi
check "target left running" not_stopped "$tp"
kill "$tp"
rm -f "$dat"
finish
