#!/usr/bin/env bash
# Target memory that never answers a read: pages registered with
# userfaultfd whose faults the target never resolves (hostile_stop_uffd).
# A process_vm_readv of them waits in the kernel, killably only.
#  (a) a fake segment so registered: -t heap reads it on a helper thread
#      with a 2 s deadline and ends with a warning; SIGTERM ends it at once;
#  (b) a sleeping thread's stack so registered: the ptrace snapshot's read
#      is on the tracer itself; the watchdog ends the process 3 s into the
#      read (exit 8) and the kernel lets go of every thread;
#  (d) a registered page inside a spinning thread's frame, above what the
#      kernel copies for a perf sample: the rest of the stack is read on
#      a helper thread with a 2 s deadline; the capture ends as asked,
#      with that thread's stacks partial, and says the read did not return;
#  (c) the unprivileged attacker (no CAP_SYS_PTRACE, vm.unprivileged_
#      userfaultfd 0) gets only a user-mode-only userfaultfd, whose
#      faults never hold a kernel read: the read fails at once.
# The attacker of (a) and (b) is root (or holds CAP_SYS_PTRACE).
source "$(dirname "$0")/lib.sh"
# The sanitizer pass: LeakSanitizer stops the world at exit and waits for
# every thread to stop; the abandoned reader of the segment waits in the
# kernel, killably only, and never does, so the exit would hang. A plain
# build's exit ends it at once (exit_group), which is what is tested here.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

U=$TARGETS/hostile_stop_uffd

# (a) the segment
start_hostile seg "$U" segment
grep -q um "/proc/$TPID/smaps" || echo "   (no 'um' VmFlag in its smaps?)"
bounded seg 5 64 -p "$TPID" -t heap -o "$WORK/seg.pb.gz"
check "seg: says the read did not return" grep -q "did not return in 2 s" "$WORK/seg.stderr"
check "seg: no profile written" test ! -e "$WORK/seg.pb.gz"
alive seg
sigterm_within seg-term 0.5 -p "$TPID" -t heap -o "$WORK/seg-term.pb.gz"
check "seg-term: exit 8 (interrupted; rc $RC)" test "$RC" = 8
check "seg-term: no profile written" test ! -e "$WORK/seg-term.pb.gz"
alive seg-term
# ... and a series over it: every capture fails the same, and the series says so and ends.
bounded seg-series 5 64 -p "$TPID" -t heap --every 1s --count 3 -o "$WORK/seg-%n.pb.gz"
check "seg-series: ends non-zero (rc $RC)" test "$RC" != 0
alive seg-series

# (b) the stack of a sleeping thread, read by the tracer
start_hostile stack "$U" stack
bounded stack 8 64 -p "$TPID" -t threads -o "$WORK/stack.pb.gz"
check "stack: exit 8 (rc $RC)" test "$RC" = 8
check "stack: one line names the read and the phase" \
	grep -q "memory at 0x[0-9a-f]* has not returned in 3\.[0-9] s .* while capturing" "$WORK/stack.stderr"
check "stack: no profile written" test ! -e "$WORK/stack.pb.gz"
check "stack: no temporary left" sh -c "! ls -a '$WORK' | grep -q '^\.stack'"
alive stack
sigterm_within stack-term 0.5 -p "$TPID" -t threads -o "$WORK/stack-term.pb.gz"
check "stack-term: exit 8 (rc $RC)" test "$RC" = 8
check "stack-term: no profile written" test ! -e "$WORK/stack-term.pb.gz"
alive stack-term
# wall samples sleeping threads on a clock: the same read, the same end
bounded stack-wall 8 64 -p "$TPID" -t wall -d 20s -o "$WORK/stack-wall.pb.gz"
check "stack-wall: exit 8 (rc $RC)" test "$RC" = 8
alive stack-wall

# (d) a hole in a running thread's stack, read for perf samples
start_hostile hole "$U" hole
bounded hole 8 64 -p "$TPID" --sampler perf -d 3s -o "$WORK/hole.pb.gz"
check "hole: a profile, exit 0 (rc $RC)" test "$RC" = 0 -a -s "$WORK/hole.pb.gz"
check "hole: says the read did not return" grep -q "did not return" "$WORK/hole.stderr" ||
	cat "$WORK/hole.stderr" >&2
alive hole

# (c) the unprivileged attacker's user-mode-only userfaultfd
start_hostile useg as_attacker "$U" segment -u
bounded useg 5 64 -p "$TPID" -t heap -o "$WORK/useg.pb.gz"
check "useg: the read failed, no wait" sh -c "! grep -q 'did not return' '$WORK/useg.stderr'"
alive useg
start_hostile ustack as_attacker "$U" stack -u
bounded ustack 10 64 -p "$TPID" -t threads -o "$WORK/ustack.pb.gz"
check "ustack: a profile, exit 0 (rc $RC)" test "$RC" = 0 -a -s "$WORK/ustack.pb.gz"
alive ustack
finish
