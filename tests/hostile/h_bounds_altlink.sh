#!/usr/bin/env bash
# Debug files that DWARF names, made FIFOs (issue 25, bounded work).
# altlink: a dwz link to a FIFO: the attacker's shared
# object (built with -g) names its functions through DW_FORM_strp_sup,
# strings kept in a dwz "alt" file, and its .gnu_debugaltlink names a FIFO
# of the attacker's as that file. libdw, left to itself, opens the named
# path as root the first time it reads such a name, and a FIFO blocks that
# open for ever (SIGTERM too: the capture loop never sees it again).
# cprof-attach must look for the alt file only by build ID, under the caps
# of any debug file, and give libdw a stand-in when there is none: the
# capture completes in bounded time, the functions keep their symbol
# names, and the target runs on.
# split: split DWARF (-gsplit-dwarf) whose .dwo file, named by the
# skeleton unit relative to its compilation directory (the attacker's),
# is a FIFO: libdw would open it the same way; cprof-attach does not read
# split DWARF at all (a note says so), and the capture completes.
. "$(dirname "$0")/lib.sh"

bounds_so "$WORK/aso.c" "$WORK/a0.so" -g || exit 1

# Every subprogram's DW_AT_name in DW_FORM_strp becomes DW_FORM_strp_sup
# (same size): the name is then read from the alt file.
python3 - "$WORK/a0.so" "$WORK/a1.so" <<'PY' || exit 1
import struct, sys
src, dst = sys.argv[1], sys.argv[2]
d = bytearray(open(src, 'rb').read())
shoff, = struct.unpack_from('<Q', d, 0x28)
shnum, shstrndx = struct.unpack_from('<HH', d, 0x3c)
SH = '<IIQQQQIIQQ'
def sh(i):
    return list(struct.unpack_from(SH, d, shoff + 64 * i))
names = sh(shstrndx)[4]
def name(i):
    o = names + sh(i)[0]
    return bytes(d[o:d.index(b'\0', o)]).decode()
ab = next(sh(i) for i in range(shnum) if name(i) == '.debug_abbrev')
pos, end, n = ab[4], ab[4] + ab[5], 0
def uleb():
    global pos
    v = s = 0
    while True:
        b = d[pos]
        pos += 1
        v |= (b & 0x7f) << s
        s += 7
        if b < 0x80:
            return v
while pos < end:
    if uleb() == 0:
        continue
    tag = uleb()
    pos += 1
    while True:
        a, f = uleb(), uleb()
        if f == 0x21:
            uleb()
        if a == 0 and f == 0:
            break
        if tag == 0x2e and a == 0x03 and f == 0x0e:
            d[pos - 1] = 0x1d
            n += 1
assert n > 0
open(dst, 'wb').write(d)
PY
mkfifo "$AWORK/alt.fifo"
{ printf '%s\0' "$AWORK/alt.fifo"; head -c 20 /dev/urandom; } >"$WORK/altlink"
objcopy --add-section .gnu_debugaltlink="$WORK/altlink" "$WORK/a1.so" "$AWORK/altlink.so" || exit 1
chown "$ATTACKER_UID:$ATTACKER_GID" "$AWORK/alt.fifo" "$AWORK/altlink.so"

start_hostile altlink as_attacker "$TARGETS/hostile_bounds_dl" run 0 "$AWORK/altlink.so"
bounded altlink 20 300 -p "$TPID" -t wall -d 2s -o "$WORK/altlink.pb.gz"
check "altlink: the capture completes (exit $RC)" test "$RC" = 0 || cat "$WORK/altlink.stderr"
"$PBDUMP" "$WORK/altlink.pb.gz" >"$WORK/altlink.txt" 2>&1
check "altlink: the object's frames keep their symbol names" grep -q 'bounds_hot' "$WORK/altlink.txt"
alive altlink
kill -9 "$TPID" 2>/dev/null

(cd "$AWORK" && ${CC:-cc} -O2 -g -gsplit-dwarf -shared -fPIC -fvisibility=hidden -o split.so "$WORK/aso.c") || exit 1
dwo=$(ls "$AWORK"/split*.dwo | head -1)
check "split: the skeleton names a .dwo file" test -n "$dwo"
rm -f "$dwo"
mkfifo "$dwo"
chown "$ATTACKER_UID:$ATTACKER_GID" "$dwo" "$AWORK/split.so"
start_hostile split as_attacker "$TARGETS/hostile_bounds_dl" run 0 "$AWORK/split.so"
bounded split 20 300 -p "$TPID" -t wall -d 2s -o "$WORK/split.pb.gz"
check "split: the capture completes (exit $RC)" test "$RC" = 0 || cat "$WORK/split.stderr"
check "split: a note says split DWARF is not read" grep -q "split.so: split DWARF" "$WORK/split.stderr"
"$PBDUMP" "$WORK/split.pb.gz" >"$WORK/split.txt" 2>&1
check "split: the object's frames keep their symbol names" grep -q 'bounds_hot' "$WORK/split.txt"
alive split
finish
