#!/usr/bin/env bash
# A MiniDebugInfo bomb over several objects (issue 25, bounded work): the
# attacker's target loads eight stripped shared objects whose
# .gnu_debugdata each decompresses to a 60 MiB ELF file (just under the
# 64 MiB cap per object) and a ninth whose decompresses to 100 MiB. The
# hot code of each is a static function, so cprof-attach reads every
# object's MiniDebugInfo to name it. The decoded files held at once are
# capped at 256 MiB across objects (unwind/minidebug.h): peak RSS stays
# under 350 MiB where the per-object cap alone would allow 540 MiB; each cap
# hit is said in a note naming the object and the cap, and the capture
# completes. The time bound is loose: decoding 256 MiB costs about a second
# of CPU, and a loaded test machine stretches that.
. "$(dirname "$0")/lib.sh"

bounds_so "$WORK/mso.c" "$WORK/m.so" || exit 1
strip --strip-all "$WORK/m.so"

# An xz stream of an ELF header followed by MiB MiB of zeros: a valid,
# empty ELF file, kept by cprof once decoded.
python3 - "$WORK" <<'PY' || exit 1
import lzma, struct, sys
eh = b'\x7fELF' + bytes([2, 1, 1]) + bytes(9) + struct.pack('<HHIQQQIHHHHHH', 3, 62, 1, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0)
for mib in (60, 100):
    c = lzma.LZMACompressor(preset=0)
    out = [c.compress(eh)]
    z = bytes(1 << 20)
    for i in range(mib):
        out.append(c.compress(z))
    out.append(c.flush())
    open('%s/mini%d.xz' % (sys.argv[1], mib), 'wb').write(b''.join(out))
PY
objs=()
for i in 1 2 3 4 5 6 7 8; do
	objcopy --add-section .gnu_debugdata="$WORK/mini60.xz" "$WORK/m.so" "$AWORK/mini$i.so" || exit 1
	objs+=("$AWORK/mini$i.so")
done
objcopy --add-section .gnu_debugdata="$WORK/mini100.xz" "$WORK/m.so" "$AWORK/minihuge.so" || exit 1
objs+=("$AWORK/minihuge.so")
chown "$ATTACKER_UID:$ATTACKER_GID" "${objs[@]}"
check "the objects have no .symtab" sh -c "! readelf -S -W '$AWORK/mini1.so' | grep -q ' .symtab '"

start_hostile minibomb as_attacker "$TARGETS/hostile_bounds_dl" run 0 "${objs[@]}"
bounded minibomb 180 350 -p "$TPID" -t wall -d 2s -o "$WORK/minibomb.pb.gz"
check "minibomb: the capture completes (exit $RC)" test "$RC" = 0
check "minibomb: a note names the object past the cap per object" \
	grep -q 'minihuge.so: its MiniDebugInfo (.gnu_debugdata) decompresses to more than 64 MiB, the cap per object' \
	"$WORK/minibomb.stderr" || cat "$WORK/minibomb.stderr"
check "minibomb: one note names an object and the cap across objects" \
	sh -c "[ \$(grep -c 'mini[0-9].so: MiniDebugInfo (.gnu_debugdata) of this run would hold more than 256 MiB, the cap across objects' '$WORK/minibomb.stderr') = 1 ]" ||
	cat "$WORK/minibomb.stderr"
alive minibomb
finish
