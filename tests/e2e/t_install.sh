#!/usr/bin/env bash
# make install puts the program, the shim, the man page, cprof.h and its
# pkg-config file under PREFIX; the installed program runs and finds the
# installed shim for its LD_PRELOAD hint; a program built with
# `pkg-config --cflags --libs cprof` runs without the shim (its label
# calls no-ops) and with the installed one (they take effect).
. "$(dirname "$0")/lib.sh"

make -s -C "$TOP" install PREFIX="$WORK/inst" >"$WORK/install.log" 2>&1
check "make install succeeds" [ $? = 0 ]
check "bin/cprof-attach installed" [ -x "$WORK/inst/bin/cprof-attach" ]
check "lib/libcprof.so installed" [ -f "$WORK/inst/lib/libcprof.so" ]
check "the man page installed" [ -f "$WORK/inst/share/man/man1/cprof-attach.1" ]
check "the man page renders" sh -c "man -l '$WORK/inst/share/man/man1/cprof-attach.1' 2>/dev/null | grep -q 'EXIT STATUS' || MANWIDTH=80 groff -man -Tutf8 '$WORK/inst/share/man/man1/cprof-attach.1' 2>/dev/null | grep -q 'EXIT STATUS'"
check "the installed program runs" "$WORK/inst/bin/cprof-attach" --version
check "include/cprof.h installed" [ -f "$WORK/inst/include/cprof.h" ]
check "lib/pkgconfig/cprof.pc installed" [ -f "$WORK/inst/lib/pkgconfig/cprof.pc" ]
cat >"$WORK/uses.c" <<'EOF'
#include <stdio.h>
#include <cprof.h>
int main(void)
{
	cprof_labels_push("endpoint", "/x", "tenant", "a", NULL);
	cprof_labels_set("job", "y", NULL);
	cprof_labels_clear();
	cprof_labels_pop();
	printf("active=%d\n", cprof_labels_active());
	return 0;
}
EOF
flags=$(PKG_CONFIG_PATH="$WORK/inst/lib/pkgconfig" pkg-config --cflags --libs cprof)
check "a program builds with pkg-config's flags ($flags)" cc -Wall -Werror -o "$WORK/uses" "$WORK/uses.c" $flags
check "it runs without the shim, the calls no-ops" test "$("$WORK/uses")" = active=0
check "it runs with the installed shim, the calls taking effect" \
	test "$(LD_PRELOAD="$WORK/inst/lib/libcprof.so" "$WORK/uses")" = active=1
start_target duty
"$WORK/inst/bin/cprof-attach" -p "$TPID" -t heap 2>"$WORK/hint.err"
check "its LD_PRELOAD hint names the installed shim" grep -Eq "LD_PRELOAD=$WORK/inst/lib/libcprof.so(,|\$)" "$WORK/hint.err"
finish
