#!/usr/bin/env bash
# h_trust_linecache — one process cannot poison the source lines the line
# cache (unwind/linecache.h) later shows for another. The attacker copies
# the host's libc (same code, same build ID) and adds DWARF of its own
# that puts every address at poisoned.c:666, then runs
# tests/targets/hostile_trust_names.c on that copy (LD_LIBRARY_PATH). Root
# profiles it, which fills the cache, then profiles the same program on
# the real libc: its libc frames must show the real lines, never
# poisoned.c, and a second innocent snapshot must still take its lines
# from the cache (the cache stays useful for what it may keep).
. "$(dirname "$0")/lib.sh"

LIBC=$(awk '$NF ~ /\/libc\.so\.6$/ { print $NF; exit }' /proc/self/maps)
[ -n "$LIBC" ] || LIBC=$(ldconfig -p | awk '/libc\.so\.6 .*x86-64/ { print $NF; exit }')
bid=$(readelf -n "$LIBC" | awk '/Build ID/ { print $3 }')

# The attacker's libc: the real one's bytes and build ID, with lying DWARF
# taken from a function at line 666 of "poisoned.c" that spans 4 MiB of
# addresses from 0x1000, more than libc's text.
cat >"$AWORK/poisoned.c" <<'SRC'
#line 666 "poisoned.c"
void poisoned(void) { __asm__ volatile(".skip 0x400000, 0x90"); }
SRC
as_attacker sh -c '
	set -e
	cd "$1"
	cc -g -O0 -c poisoned.c -o poisoned.o
	cc -nostdlib -static -Wl,--build-id=none -Wl,-Ttext=0x1000 -Wl,-e,poisoned -o fake poisoned.o
	mkdir -p evil
	cp "$2" evil/libc.so.6
	args=
	for s in $(readelf -SW fake | grep -o "\.debug_[a-z_]*"); do
		objcopy --dump-section "$s=sec$s" fake
		args="$args --add-section $s=sec$s"
	done
	objcopy $args evil/libc.so.6
' sh "$AWORK" "$LIBC" || { fail "the attacker could not build its libc"; finish; }
check "the attacker's libc claims the real one's build ID ($bid)" \
	sh -c "readelf -n '$AWORK/evil/libc.so.6' | grep -q 'Build ID: $bid'"
check "... and is the attacker's file" test "$(stat -c %u "$AWORK/evil/libc.so.6")" = "$ATTACKER_UID"

start_hostile evil as_attacker env LD_LIBRARY_PATH="$AWORK/evil" "$TARGETS/hostile_trust_names"
check "the hostile target runs on the forged libc" grep -q "$AWORK/evil/libc.so.6" "/proc/$TPID/maps"
bounded hostile 30 300 -p "$TPID" -t threads --format dump --stats -o "$WORK/hostile.txt"
# Its own profile shows its own word: the forgery works, for itself.
check "the hostile target's own profile shows its poisoned.c (its word, for itself)" \
	grep -q 'at poisoned.c:666 (libc.so.6)' "$WORK/hostile.txt"
alive evil
HPID=$TPID

# The innocent: the same program on the real libc, root's.
start_hostile innocent "$TARGETS/hostile_trust_names"
bounded innocent 30 300 -p "$TPID" -t threads --format dump --stats -o "$WORK/innocent.txt"
check "the innocent profile holds no poisoned.c" \
	sh -c "! grep -q poisoned '$WORK/innocent.txt'" || grep poisoned "$WORK/innocent.txt" | head -3
check "... and has libc's real lines" grep -qE 'clock_nanosleep\+0x[0-9a-f]+ at [a-z_]+\.c:[0-9]+ \(libc\.so\.6\)' "$WORK/innocent.txt" ||
	head -8 "$WORK/innocent.txt"
bounded innocent2 30 300 -p "$TPID" -t threads --format dump --stats -o "$WORK/innocent2.txt"
check "a second innocent snapshot: still no poisoned.c" sh -c "! grep -q poisoned '$WORK/innocent2.txt'"
warm=$(sed -n 's/.* (\([0-9]*\) from the line cache, .*/\1/p' "$WORK/innocent2.stderr")
check "... with its libc lines from the cache (${warm:-none} from the line cache)" test "${warm:-0}" -gt 0
no_secret linecache "$WORK/hostile.txt" "$WORK/innocent.txt"
TPID=$HPID
sigterm_within linecache-term 0.3 -p "$TPID" -d 10s -o "$WORK/term.pb.gz"
alive evil
finish
