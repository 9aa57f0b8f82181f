#!/usr/bin/env bash
# Kernel stacks of sleeping threads (issue 28, part 2). As root, a threads
# snapshot, a thread dump and a wall profile of the parking target show
# below each sleeping thread's user stack the kernel stack it is blocked
# in, read from /proc/PID/task/TID/stack without stopping it: its pipe
# readers in pipe_read, its condition waiters in a futex wait, its epoll
# pollers in ep_poll, each kernel stack ending at the system call's entry,
# in pprof's mapping [kernel.kallsyms]; no wait is disturbed (EINTR).
# --no-kernel has none, and neither has a user who may not read the file
# (the profile is as before, with no error).
. "$(dirname "$0")/lib.sh"

start_target parking
tp=$TPID

# stacks FILE: "COUNT ROOT;...;LEAF" per sample of a profile.
stacks() {
	"$PBDUMP" "$1" | awk '/^sample / { split($2, v, ","); s = $0; sub(/.* stack /, "", s); print v[1], s }'
}
# threads FILE FUNC RE: how many threads' stacks pass through the user
# function FUNC and then match the regular expression RE.
threads() {
	awk -v f="$2" -v re="$3" '$0 ~ (";" f "(;|$)") && $0 ~ re { n += $1 } END { print n + 0 }' "$1"
}

if [ "$(id -u)" = 0 ]; then
	"$ATTACH" -p "$tp" -t threads -o "$WORK/t.pb.gz" -q --summary json >"$WORK/t.json" ||
		fail "threads snapshot failed"
	ks=$(sed -n 's/.*"kernel_stacks":\([0-9]*\).*/\1/p' "$WORK/t.json")
	# A sleeper that kept waking while read is stopped instead (under an
	# ASan tracer, one in a run), and a stopped thread's kernel stack is
	# our stop: it has none. Two are allowed, here and below.
	check "--summary json counts the kernel stacks (${ks:-none}: 36 sleepers, and the flapper when asleep)" [ "${ks:-0}" -ge 34 ]
	stacks "$WORK/t.pb.gz" >"$WORK/t.txt"
	# Kernels name these differently (pipe_read, anon_pipe_read; ep_poll
	# or do_epoll_wait as its caller): the stack's end, and the family.
	n=$(threads "$WORK/t.txt" park_read ';read;.*;entry_SYSCALL_64[a-z_]*;.*;[a-z_]*pipe_read(;|$)')
	check "the 4 pipe readers sleep in pipe_read under read ($n)" [ "$n" = 4 ]
	n=$(threads "$WORK/t.txt" park_epoll ';epoll_wait;.*;(ep_poll|do_epoll_wait)(;|$)')
	check "the 5 epoll pollers sleep in the epoll wait under epoll_wait ($n)" [ "$n" = 5 ]
	n=$(threads "$WORK/t.txt" park_cond ';__x64_sys_futex;.*futex_wait')
	check "the 3 condition waiters sleep in a futex wait ($n)" [ "$n" = 3 ]
	n=$(awk '$0 ~ /;entry_SYSCALL_64[a-z_]*;do_syscall_64;/ { n += $1 } END { print n + 0 }' "$WORK/t.txt")
	check "every sleeping thread's kernel stack reaches the system call's entry ($n stacks: 36 sleepers, and the flapper when asleep)" \
		[ "$n" -ge 34 ]
	check "kernel frames are in the [kernel.kallsyms] mapping" \
		sh -c "'$PBDUMP' '$WORK/t.pb.gz' | grep -q 'kernel.kallsyms'"
	"$ATTACH" -p "$tp" -t threads --format dump -o "$WORK/d.txt" -q || fail "dump failed"
	check "the dump shows pipe_read in [kernel.kallsyms]" grep -q 'pipe_read (\[kernel.kallsyms\])' "$WORK/d.txt"
	"$ATTACH" -p "$tp" -t wall -d 1s -o "$WORK/w.pb.gz" -q || fail "wall capture failed"
	stacks "$WORK/w.pb.gz" >"$WORK/w.txt"
	n=$(threads "$WORK/w.txt" park_read ';[a-z_]*pipe_read(;|$)')
	check "wall: the pipe readers' time is in pipe_read ($n ticks)" [ "$n" -gt 0 ]
	"$ATTACH" -p "$tp" -t threads --no-kernel -o "$WORK/nk.pb.gz" -q || fail "--no-kernel snapshot failed"
	check "--no-kernel: no kernel frames" \
		sh -c "! '$PBDUMP' '$WORK/nk.pb.gz' | grep -q 'kernel.kallsyms'"
	if command -v setpriv >/dev/null; then
		# A target of its own user: the kernel stack file is root's alone.
		chmod 777 "$WORK"
		setpriv --reuid=65534 --regid=65534 --clear-groups "$TARGETS/parking" >"$WORK/np.out" 2>&1 &
		np=$!
		PIDS="$PIDS $np"
		sleep 0.5
		setpriv --reuid=65534 --regid=65534 --clear-groups "${REAL_ATTACH:-$ATTACH}" -p "$np" \
			-t threads -o "$WORK/u.pb.gz" 2>"$WORK/u.err"
		rc=$?
		check "unprivileged: exit 0 ($rc), no error" sh -c "[ $rc = 0 ] && ! grep -q error '$WORK/u.err'"
		check "unprivileged: no kernel frames" \
			sh -c "! '$PBDUMP' '$WORK/u.pb.gz' | grep -q 'kernel.kallsyms'"
		kill "$np"
	fi
else
	echo "not root: kernel stacks are root's to read; not tested"
fi
check "target never left stopped" not_stopped "$tp"
check "no disturbance reached the target ($(last_tick "$WORK/parking.out"))" \
	[ "$(last_tick "$WORK/parking.out" | awk '{ print $2 }')" = 0 ]
finish
