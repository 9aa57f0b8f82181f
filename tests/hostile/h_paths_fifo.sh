#!/usr/bin/env bash
# h_paths_fifo — a FIFO and a device in place of a mapped file (issue 25).
# The attacker maps a file of its own, then (c1) deletes it and makes a
# FIFO of the same name, or (c2) bind-mounts /dev/zero over it in its mount
# namespace. cprof-attach runs as root without CAP_SYS_ADMIN (and
# CAP_CHECKPOINT_RESTORE), so that /proc/PID/map_files, which would give
# the very file mapped, is closed to it and the path is what it opens.
# It must not block on the FIFO, must not open the device (strace: no
# open for reading returns a character device's descriptor), and the
# capture ends within 10 s under 150 MiB, SIGTERM within 2 s, with a note
# naming what was refused; the target runs on. (c3): with CAP_SYS_ADMIN,
# map_files gives the mapped file itself.
. "$(dirname "$0")/lib.sh"

PROG=$AWORK/mapper
cp "$TARGETS/hostile_paths_target" "$PROG"
mkdir -p "$AWORK/lib"
cp "$TARGETS/hostile_paths_target" "$AWORK/lib/fifo.so"
cp "$TARGETS/hostile_paths_target" "$AWORK/lib/dev.so"
chown -R "$ATTACKER_UID:$ATTACKER_GID" "$AWORK/lib"

# cprof-attach as root, without the capabilities map_files needs.
REAL_ATTACH=$ATTACH
NOADMIN=$WORK/attach-noadmin
cat >"$NOADMIN" <<EOF
#!/bin/sh
exec setpriv --bounding-set=-sys_admin,-checkpoint_restore --inh-caps=-sys_admin,-checkpoint_restore \
	-- "$REAL_ATTACH" "\$@"
EOF
chmod +x "$NOADMIN"

# c1: the FIFO.
start_hostile c1 as_attacker unshare -Urm "$PROG" --fifo "$AWORK/lib/fifo.so"
check "c1: the mapped file is now a FIFO" test -p "/proc/$TPID/root$AWORK/lib/fifo.so"
ATTACH=$NOADMIN
bounded c1-fifo 10 150 -p "$TPID" -d 1s -o "$WORK/c1.pb.gz"
check "c1-fifo: the capture completes (exit $RC)" [ "$RC" = 0 ]
check "c1-fifo: the profile is written" [ -s "$WORK/c1.pb.gz" ]
check "c1-fifo: a note says the FIFO was refused" grep -q "fifo.so.* is a FIFO" "$WORK/c1-fifo.stderr" ||
	cat "$WORK/c1-fifo.stderr"
no_secret c1-fifo "$WORK/c1.pb.gz"
alive c1-fifo
sigterm_within c1-sigterm 1 -p "$TPID" -d 30s -o "$WORK/c1t.pb.gz"
check "c1-sigterm: the profile is written" [ -s "$WORK/c1t.pb.gz" ]
ATTACH=$REAL_ATTACH
kill -9 "$TPID"

# c2: the device, bind-mounted over the mapped file in the attacker's namespace.
start_hostile c2 as_attacker unshare -Urm "$PROG" --dev "$AWORK/lib/dev.so"
check "c2: the mapped file's path is now a device" test -c "/proc/$TPID/root$AWORK/lib/dev.so"
if command -v strace >/dev/null; then
	ATTACH=$WORK/attach-traced
	cat >"$ATTACH" <<EOF
#!/bin/sh
# LeakSanitizer (a sanitized build) cannot run under a tracer: it would exit 1.
export ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0"
exec strace -f -qq -yy -e trace=open,openat,openat2 -o "$WORK/c2.trace" "$NOADMIN" "\$@"
EOF
	chmod +x "$ATTACH"
	bounded c2-dev 20 150 -p "$TPID" -d 1s -o "$WORK/c2.pb.gz"
	ATTACH=$REAL_ATTACH
	check "c2-dev: the capture completes (exit $RC)" [ "$RC" = 0 ]
	# Opens for reading (not O_PATH) that succeeded on the device's path
	# (named, or shown by -yy as the descriptor's) or gave a character device.
	grep -v O_PATH "$WORK/c2.trace" | grep -E '= [0-9]+<' |
		grep -E 'dev\.so|<char [0-9]+:[0-9]+>>' | grep -vE '"/dev/(null|tty|urandom)"' >"$WORK/c2.devs"
	check "c2-dev: no device opened for reading ($(wc -l <"$WORK/c2.devs") opens)" [ ! -s "$WORK/c2.devs" ] ||
		cat "$WORK/c2.devs"
	check "c2-dev: the trace saw the path tried" grep -q 'dev\.so' "$WORK/c2.trace"
	check "c2-dev: a note says the device was refused" grep -q "dev.so.* is a device" "$WORK/c2-dev.stderr" ||
		cat "$WORK/c2-dev.stderr"
	alive c2-dev
else
	echo "SKIP: c2 needs strace to see what is opened"
fi

# c3: with CAP_SYS_ADMIN, map_files gives the mapped file (the FIFO is never looked at).
bounded c3-mapfiles 10 150 -p "$TPID" -d 1s -o "$WORK/c3.pb.gz"
check "c3-mapfiles: the capture completes (exit $RC)" [ "$RC" = 0 ]
check "c3-mapfiles: no note of a refused device" sh -c "! grep -q 'is a device' '$WORK/c3-mapfiles.stderr'"
alive c3-mapfiles
finish
