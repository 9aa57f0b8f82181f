#!/usr/bin/env bash
# h_trust_outfile — -o into a sticky directory everyone may write to (a
# /tmp of our own): what another user planted at the output path is never
# written into. A FIFO without a reader would block root's cprof-attach for
# ever: refused at once. A symbolic link to the attacker's own FIFO (which
# it reads, to steal the profile) is refused: nothing reaches it. A link to
# a file of root's leaves that file untouched, a link to a directory of
# root's on the way (-o STICKY/LINK/out) is refused; a regular file of the
# attacker's is replaced, not written into. What the user asks for
# explicitly still works: -o /dev/null, -o -, a FIFO of root's own.
. "$(dirname "$0")/lib.sh"

S=$WORK/sticky
mkdir -p "$S"
chmod 1777 "$S"
start_hostile tgt as_attacker "$TARGETS/hostile_trust_names"

# A FIFO at the path, no reader.
as_attacker mkfifo -m 666 "$S/a.pb.gz"
bounded fifo 10 200 -p "$TPID" -d 200ms -o "$S/a.pb.gz"
check "another user's FIFO is refused (exit $RC)" test "$RC" -ne 0
check "... with one line naming it" \
	sh -c "[ \$(grep -c 'it is a FIFO of another user (uid $ATTACKER_UID)' '$WORK/fifo.stderr') = 1 ]" ||
	cat "$WORK/fifo.stderr"

# A link to the attacker's FIFO, which it reads.
as_attacker mkfifo -m 600 "$AWORK/steal"
# The reader's own output never the suite's: a reader left blocked on the
# FIFO (nothing ever opens it to write, when cprof is right) must not hold
# the runner's stdout open; it is killed at the end.
# setpriv itself, not as_attacker (a function: & would fork a subshell
# and $! would not be the reader).
setpriv --reuid="$ATTACKER_UID" --regid="$ATTACKER_GID" --clear-groups --inh-caps=-all -- \
	sh -c "exec cat '$AWORK/steal' >'$AWORK/stolen'" </dev/null >/dev/null 2>&1 &
PIDS="$PIDS $!"
as_attacker ln -s "$AWORK/steal" "$S/b.pb.gz"
bounded link 10 200 -p "$TPID" -d 200ms -o "$S/b.pb.gz"
check "another user's link is refused (exit $RC)" test "$RC" -ne 0
check "... with one line naming it" grep -q 'it is a symbolic link of another user' "$WORK/link.stderr" ||
	cat "$WORK/link.stderr"
sleep 0.2
check "nothing reached the attacker's FIFO ($(stat -c %s "$AWORK/stolen" 2>/dev/null) bytes)" \
	test ! -s "$AWORK/stolen"

# A link to a file of root's.
printf 'precious\n' >"$WORK/victim"
as_attacker ln -s "$WORK/victim" "$S/c.pb.gz"
bounded victim 10 200 -p "$TPID" -d 200ms -o "$S/c.pb.gz"
check "root's file behind another user's link is untouched" grep -qx precious "$WORK/victim"

# A link on the way: $S/dir, the attacker's link to a directory of root's.
mkdir -p "$WORK/rootdir"
as_attacker ln -s "$WORK/rootdir" "$S/dir"
bounded dirlink 10 200 -p "$TPID" -d 200ms -o "$S/dir/out.pb.gz"
check "another user's link as a directory on the way is refused (exit $RC)" \
	sh -c "[ $RC != 0 ] && grep -q '\"dir\" is a symbolic link of another user' '$WORK/dirlink.stderr'" ||
	cat "$WORK/dirlink.stderr"
check "... nothing written in root's directory behind it" test -z "$(ls -A "$WORK/rootdir")"

# A regular file of the attacker's: replaced by root's profile, its inode untouched.
as_attacker sh -c ": >'$S/d.pb.gz'; ln '$S/d.pb.gz' '$AWORK/d-keep'"
bounded regular 10 200 -p "$TPID" -d 200ms -o "$S/d.pb.gz"
check "another user's regular file is replaced (exit $RC, now root's)" \
	sh -c "[ $RC = 0 ] && [ \$(stat -c %u '$S/d.pb.gz') = 0 ] && [ -s '$S/d.pb.gz' ]"
check "... never written into: the attacker's inode is still empty" test ! -s "$AWORK/d-keep"

# What the user asks for explicitly.
bounded devnull 10 200 -p "$TPID" -d 200ms -o /dev/null
check "-o /dev/null works (exit $RC)" test "$RC" = 0
bounded stdout 10 200 -p "$TPID" -d 200ms -o -
check "-o - works (exit $RC, $(stat -c %s "$WORK/stdout.stdout") bytes)" sh -c "[ $RC = 0 ] && [ -s '$WORK/stdout.stdout' ]"
mkfifo -m 600 "$S/e.pb.gz"
cat "$S/e.pb.gz" >"$WORK/e.read" &
PIDS="$PIDS $!"
bounded ownfifo 10 200 -p "$TPID" -d 200ms -o "$S/e.pb.gz"
sleep 0.2
check "a FIFO of root's own in the sticky directory is written into (exit $RC)" \
	sh -c "[ $RC = 0 ] && [ -s '$WORK/e.read' ]"

no_secret outfile $(find "$S" -type f) "$AWORK/stolen"
sigterm_within outfile-term 0.3 -p "$TPID" -d 10s -o "$S/term.pb.gz"
alive tgt
finish
