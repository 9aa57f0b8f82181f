#!/usr/bin/env bash
# A compressed-DWARF bomb (issue 25, bounded work): the attacker's shared
# object has a DWARF section (.debug_rnglists or .debug_aranges) marked
# SHF_COMPRESSED whose zlib stream really inflates to 600 MiB of zeros (a
# 600 KiB section: libelf's own check refuses only ratios past 1032:1).
# libdw inflates every compressed debug section in full when it opens a
# file; cprof-attach must refuse the object first (cap: 512 MiB per object,
# unwind/dwlines.h), say so in one note naming the object and the cap,
# keep the object's frames named by its symbols, and finish the capture
# in bounded time and memory; SIGTERM still ends a capture at once.
. "$(dirname "$0")/lib.sh"

bounds_so "$WORK/bso.c" "$WORK/b.so" -g || exit 1

# Point that section at an appended Elf64_Chdr + zlib stream of MIB MiB
# of zeros: one full-flushed 1 MiB block repeated, an empty final block,
# the Adler-32 of the zeros.
python3 - "$WORK/b.so" "$AWORK/bomb.so" 600 <<'PY' || exit 1
import struct, sys, zlib
src, dst, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
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
byname = {name(i): i for i in range(shnum)}
target = next(byname[n] for n in ('.debug_rnglists', '.debug_aranges', '.debug_str') if n in byname)
c = zlib.compressobj(9)
b1 = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
b2 = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
assert b1[2:] == b2
n = mib << 20
stream = b1[:2] + b2 * mib + b'\x03\x00' + struct.pack('>I', ((n % 65521) << 16) | 1)
blob = struct.pack('<IIQQ', 1, 0, n, 1) + stream
off = (len(d) + 7) & ~7
d += bytes(off - len(d)) + blob
f = sh(target)
f[2] |= 0x800  # SHF_COMPRESSED
f[4], f[5], f[8] = off, len(blob), 8
struct.pack_into(SH, d, shoff + 64 * target, *f)
open(dst, 'wb').write(d)
PY
chown "$ATTACKER_UID:$ATTACKER_GID" "$AWORK/bomb.so"
check "the bomb is a compressed debug section" sh -c "readelf -S -W '$AWORK/bomb.so' | grep -q '\.debug_[a-z]* .* C '"

start_hostile zbomb as_attacker "$TARGETS/hostile_bounds_dl" run 0 "$AWORK/bomb.so"
bounded zbomb 20 300 -p "$TPID" -t wall -d 2s -o "$WORK/zbomb.pb.gz"
check "zbomb: the capture completes (exit $RC)" test "$RC" = 0
check "zbomb: one note names the object and the cap" \
	sh -c "[ \$(grep -c 'bomb.so: its compressed DWARF sections inflate to 600 MiB, more than the cap of 512 MiB per object' '$WORK/zbomb.stderr') = 1 ]" ||
	cat "$WORK/zbomb.stderr"
"$PBDUMP" "$WORK/zbomb.pb.gz" >"$WORK/zbomb.txt" 2>&1
check "zbomb: the object's frames keep their symbol names" grep -q 'bounds_hot' "$WORK/zbomb.txt"
alive zbomb
sigterm_within zbomb-term 1 -p "$TPID" -d 30s -o "$WORK/zterm.pb.gz"
alive zbomb-term
finish
