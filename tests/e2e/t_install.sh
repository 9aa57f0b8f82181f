#!/usr/bin/env bash
# make install puts the program, the shim and the man page under PREFIX,
# and the installed program runs and finds the installed shim for its
# LD_PRELOAD hint.
. "$(dirname "$0")/lib.sh"

make -s -C "$TOP" install PREFIX="$WORK/inst" >"$WORK/install.log" 2>&1
check "make install succeeds" [ $? = 0 ]
check "bin/cprof-attach installed" [ -x "$WORK/inst/bin/cprof-attach" ]
check "lib/libcprof.so installed" [ -f "$WORK/inst/lib/libcprof.so" ]
check "the man page installed" [ -f "$WORK/inst/share/man/man1/cprof-attach.1" ]
check "the man page renders" sh -c "man -l '$WORK/inst/share/man/man1/cprof-attach.1' 2>/dev/null | grep -q 'EXIT STATUS' || MANWIDTH=80 groff -man -Tutf8 '$WORK/inst/share/man/man1/cprof-attach.1' 2>/dev/null | grep -q 'EXIT STATUS'"
check "the installed program runs" "$WORK/inst/bin/cprof-attach" --version
start_target duty
"$WORK/inst/bin/cprof-attach" -p "$TPID" -t heap 2>"$WORK/hint.err"
check "its LD_PRELOAD hint names the installed shim" grep -q "LD_PRELOAD=$WORK/inst/lib/libcprof.so\$" "$WORK/hint.err"
finish
