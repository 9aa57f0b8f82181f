#!/usr/bin/env bash
# Static executables have .eh_frame but no .eh_frame_hdr (gcc -static), or
# are position-independent (gcc -static-pie), and some builds keep their
# functions' CFI only in .debug_frame (-fno-asynchronous-unwind-tables -g):
# the stacks target built these ways must unwind exactly as the dynamic
# build does (t_stacks.sh's checks:
# qsort comparator through libc, signal handler frame, 100-deep recursion,
# main thread to _start, every stack complete).
. "$(dirname "$0")/lib.sh"

for t in stacks-static stacks-static-pie stacks-debugframe; do
	echo "-- $t"
	[ -x "$TARGETS/$t" ] || { fail "$t is built"; continue; }
	STACKS_TARGET=$t STACKS_DURATION=8s bash "$(dirname "$0")/t_stacks.sh" || fail "$t unwinds completely"
done
finish
