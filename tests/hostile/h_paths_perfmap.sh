#!/usr/bin/env bash
# h_paths_perfmap — a JIT's perf map as a way out (issue 25, "the target's
# view of the file system"). The attacker runs code it generated and makes
# its /tmp/perf-PID.map a symbolic link: (a1) to a root-only perf map of
# someone else (its names are the secret), in the host's /tmp; (a2) from a
# root of its own (chroot in its user and mount namespace) to an absolute
# path outside it, to a world-readable map; (a3) the same by "../../..".
# cprof-attach reads the map inside the target's root with the target's
# credentials: none of those names may reach the profile. Each capture
# ends within 10 s under 150 MiB and leaves the target running. (a0), the
# control: a link to a map of its own inside its root names its code.
. "$(dirname "$0")/lib.sh"

PROG=$AWORK/jitter
cp "$TARGETS/hostile_paths_target" "$PROG"
mkdir -p "$AWORK/root/tmp"
chown -R "$ATTACKER_UID:$ATTACKER_GID" "$AWORK/root"
OUTSIDE_TEXT="cprof-outside-$$-$RANDOM"

# perf_map FILE MODE ADDR TEXT: a perf map naming the code at ADDR TEXT.
perf_map() {
	printf '%s 100 %s\n' "$3" "$4" >"$1"
	chmod "$2" "$1"
}

# run CASE TEXT TARGET-ARGS...: start the attacker, write the map its link
# names (the secret's or the outside one), capture, check.
run() {
	local name=$1 text=$2 addr
	shift 2
	start_hostile "$name" as_attacker unshare -Urm "$PROG" "$@"
	addr=$(awk '/^ready/ { print $3 }' "$WORK/$name.out")
	perf_map "$WORK/secret.map" 600 "$addr" "$SECRET_TEXT"
	perf_map "$WORK/outside.map" 644 "$addr" "$OUTSIDE_TEXT"
	perf_map "$AWORK/root/tmp/own.map" 644 "$addr" jit_own_code
	bounded "$name" 10 150 -p "$TPID" -d 1s -o "$WORK/$name.pb.gz"
	check "$name: the capture completes (exit $RC)" [ "$RC" = 0 ]
	check "$name: the profile is written" [ -s "$WORK/$name.pb.gz" ]
	no_text "$name" "$text" "$WORK/$name.pb.gz" "$WORK/$name.stdout" "$WORK/$name.stderr"
	no_secret "$name" "$WORK/$name.pb.gz" "$WORK/$name.stdout" "$WORK/$name.stderr"
	[ -n "${VERBOSE:-}" ] && cat "$WORK/$name.stderr"
	alive "$name"
	kill -9 "$TPID" 2>/dev/null
	rm -f "/tmp/perf-$TPID.map" "$AWORK/root/tmp/perf-$TPID.map"
}

# (a1) In the host's /tmp, to a root-only map: its credentials could not read it.
run a1-root-only "$SECRET_TEXT" --jit "$WORK/secret.map"

# (a0) The control: its own map, in its own root, is read.
run a0-own "$SECRET_TEXT" --jit /tmp/own.map --chroot "$AWORK/root"
check "a0-own: its code is named from its own perf map" \
	sh -c "zcat '$WORK/a0-own.pb.gz' | grep -aq jit_own_code"

# (a2), (a3) From a root of its own, to a world-readable map outside it.
run a2-absolute "$OUTSIDE_TEXT" --jit "$WORK/outside.map" --chroot "$AWORK/root"
run a3-dotdot "$OUTSIDE_TEXT" --jit "../../../../../../../../../..$WORK/outside.map" --chroot "$AWORK/root"

# (a4) A map of its own of 70 MiB of short lines, its code named on the
# last: one read of its last 32 MiB and 1 Mi lines at most, never again
# while unchanged, within 15 s for a 2 s capture, under 200 MiB. The
# sanitizer pass leaves it out: under ASan this parse took 97 s (plain:
# well under 1 s); the cap itself is the plain pass's to show.
if [ "$SANITIZED" = 1 ]; then
	echo "SKIP: a4-big under sanitizers"
	finish
fi
start_hostile a4 as_attacker unshare -Urm "$PROG" --jit /tmp/big.map --chroot "$AWORK/root"
addr=$(awk '/^ready/ { print $3 }' "$WORK/a4.out")
rm -f "$AWORK/root/tmp/perf-$TPID.map" # the map itself, not a link to it
python3 -c '
import random, sys
random.seed(1)
with open(sys.argv[1], "w") as f:
    n = 0
    while n < (70 << 20):
        s = "%x %x f%d\n" % (random.getrandbits(40) << 12, random.randint(1, 4096), n)
        f.write(s)
        n += len(s)
    f.write("%s 100 jit_newest_code\n" % sys.argv[2])
' "$AWORK/root/tmp/perf-$TPID.map" "$addr"
bounded a4-big 15 200 -p "$TPID" -d 2s -o "$WORK/a4.pb.gz"
check "a4-big: the capture completes (exit $RC)" [ "$RC" = 0 ]
check "a4-big: its code is named from the map's last part" sh -c "zcat '$WORK/a4.pb.gz' | grep -aq jit_newest_code"
check "a4-big: one note names the cap" [ "$(grep -c 'perf-.*over its cap' "$WORK/a4-big.stderr")" = 1 ] ||
	cat "$WORK/a4-big.stderr"
alive a4-big
kill -9 "$TPID"
finish
