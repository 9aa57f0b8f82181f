#!/usr/bin/env bash
# A Go program keeps its CFI in .debug_frame (no .eh_frame at all): its
# sleeping threads unwind into the runtime's scheduler functions, its busy
# goroutine reaches main.main and runtime.goexit, and every stack ends
# where Go's own traceback ends it (goexit, mstart, rt0_go, or the g0
# stack's switch point mcall/systemstack/morestack). Needs a Go toolchain
# (scripts/install-deps installs golang-go); without one it says SKIP.
. "$(dirname "$0")/lib.sh"

if [ ! -x "$TARGETS/gostacks" ]; then
	echo "SKIP: t_go: $TARGETS/gostacks not built (no Go toolchain: install golang-go)"
	exit 0
fi
start_target gostacks
ROOTS='^runtime\.(goexit|mstart|rt0_go|mcall|systemstack|morestack)(\.abi0)?[; ]'

# partials FILE: the stacks (with counts) that start neither at a Go root
# nor at a [partial] root. A "[not captured: ...]" marker (a thread that
# kept waking while read, seen on a loaded sanitizer run) is no stack at
# all, and says so: not a wrong one.
partials() {
	grep -vE "$ROOTS|^\[partial|^\[not captured" "$1" | cut -c1-300
}

# A thread may be caught awake (sysmon between sleeps, a vDSO call on g0):
# up to five snapshots, until one shows every sleeper where it sleeps.
# In every snapshot each stack ends at a Go root, or is [partial] at a
# stack switch (vDSO on g0, signal handler on gsignal).
SWITCH='^\[partial: bad frame\];(\[signal handler called\];runtime\.sigtramp|runtime\.(nanotime1|walltime)(\.abi0)?;__vdso)'
for try in 1 2 3 4 5; do
	"$ATTACH" -p "$TPID" -t threads --format folded -o "$WORK/threads.txt" -q || fail "threads snapshot failed"
	bad=$(partials "$WORK/threads.txt"; grep '^\[partial' "$WORK/threads.txt" | grep -vE "$SWITCH")
	[ -z "$bad" ] || break
	grep -qE ';runtime\.notesleep;runtime\.futexsleep;runtime\.futex(\.abi0)?(;entry_SYSCALL_64[a-z_]*(;[^; ]+)*)? [0-9]+$' "$WORK/threads.txt" &&
		grep -qE '^runtime\.mstart(\.abi0)?;runtime\.mstart0;runtime\.mstart1;runtime\.sysmon;.*runtime\.(usleep|futex)(\.abi0)?(;entry_SYSCALL_64[a-z_]*(;[^; ]+)*)? [0-9]+$' "$WORK/threads.txt" &&
		grep -qE '^runtime\.goexit(\.abi0)?;(main\.main\.func[0-9]+;)?main\.lockedSleeper;syscall\.Syscall;' "$WORK/threads.txt" && break
	sleep 0.2
done
nthreads=$(awk '{ n += $NF } END { print n + 0 }' "$WORK/threads.txt")
echo "threads snapshot $try: $nthreads threads"
cat "$WORK/threads.txt"
check "every thread's stack ends at a Go stack root (or a stack switch, marked partial)" [ -z "$bad" ] ||
	echo "$bad" >&2
# As root, the kernel's stack follows from the system call's entry (t_kstack).
check "idle threads unwind into the scheduler (notesleep, futexsleep)" \
	grep -qE ';runtime\.notesleep;runtime\.futexsleep;runtime\.futex(\.abi0)?(;entry_SYSCALL_64[a-z_]*(;[^; ]+)*)? [0-9]+$' "$WORK/threads.txt"
check "sysmon's sleep unwinds to mstart" \
	grep -qE '^runtime\.mstart(\.abi0)?;runtime\.mstart0;runtime\.mstart1;runtime\.sysmon;.*runtime\.(usleep|futex)(\.abi0)?(;entry_SYSCALL_64[a-z_]*(;[^; ]+)*)? [0-9]+$' "$WORK/threads.txt"
check "the locked thread's nanosleep unwinds to main.lockedSleeper and goexit" \
	grep -qE '^runtime\.goexit(\.abi0)?;(main\.main\.func[0-9]+;)?main\.lockedSleeper;syscall\.Syscall;' "$WORK/threads.txt"

"$ATTACH" -p "$TPID" -d 3s --format folded -o "$WORK/cpu.txt" -q || fail "cpu profile failed"
n=$(awk '$1 ~ /;main\.burn$/ { n++ } END { print n + 0 }' "$WORK/cpu.txt")
ok=$(grep -cE '^runtime\.goexit(\.abi0)?;runtime\.main;main\.main;main\.burn [0-9]+$' "$WORK/cpu.txt")
echo "busy goroutine: $ok of $n stacks reach main.main and runtime.goexit"
check "busy goroutine sampled" [ "$n" -ge 1 ]
check "every busy stack reaches main.main and runtime.goexit" [ "$ok" = "$n" ]
# Go threads switch stacks where no CFI can follow: a signal handler runs
# on the gsignal stack, a vDSO call on g0. Such stacks are [partial], and
# must stay few; every other one ends at a Go root (or is a marker: CPU of
# a thread never caught running, of threads that ended unseen, or the
# kernel's side of the threads' waits). ROOTS goes through the environment:
# awk -v would read its backslashes as escapes.
ROOTS="$ROOTS" awk '{ t += $NF; if ($0 !~ ENVIRON["ROOTS"] && $0 !~ /^\[(partial|not captured|short-lived|kernel: switching)/) b += $NF
	if ($0 ~ /^\[partial/) p += $NF }
	END { printf "%.0f %.0f %.0f\n", t, p + 0, b + 0 }' "$WORK/cpu.txt" >"$WORK/share"
read -r total part other <"$WORK/share"
echo "cpu: $part of $total ns in [partial] stacks:"
grep '^\[partial' "$WORK/cpu.txt" | cut -c1-200
check "every CPU stack ends at a Go root or is marked [partial]" [ "$other" = 0 ] || partials "$WORK/cpu.txt" >&2
check "partial stacks are under 10% of the CPU time" awk -v p="$part" -v t="$total" 'BEGIN { exit !(p * 10 < t) }'
finish
