#!/usr/bin/env bash
# h_paths_sparse — a huge sparse file as a debug link's target (issue 25,
# bounded work). The attacker's stripped program links "prog.debug"
# beside it, and that is (d1) a 100 GiB file made by truncate (nothing
# stored: reading it costs the reader alone), (d2) a 1 GiB one, under the
# size cap but nearly all holes. The CRC that would check it is never
# computed: each capture ends within 10 s under 150 MiB, with one note
# naming the file, and leaves the target running; SIGTERM ends a capture
# within 2 s.
. "$(dirname "$0")/lib.sh"

BIN=$TARGETS/hostile_paths_target
mkdir -p "$WORK/lk" "$AWORK/d"
cp "$BIN" "$WORK/lk/prog.debug"
objcopy --strip-all "$BIN" "$AWORK/d/prog"
(cd "$WORK/lk" && objcopy --add-gnu-debuglink=prog.debug "$AWORK/d/prog")

# run CASE SIZE: the link's target SIZE bytes of holes, capture, check.
run() {
	local name=$1
	rm -f "$AWORK/d/prog.debug"
	truncate -s "$2" "$AWORK/d/prog.debug"
	chown -R "$ATTACKER_UID:$ATTACKER_GID" "$AWORK"
	start_hostile "$name" as_attacker unshare -Urm "$AWORK/d/prog"
	bounded "$name" 10 150 -p "$TPID" -d 1s -o "$WORK/$name.pb.gz" --no-line-cache
	check "$name: the capture completes (exit $RC)" [ "$RC" = 0 ]
	check "$name: the profile is written" [ -s "$WORK/$name.pb.gz" ]
	check "$name: one note names the file" \
		[ "$(grep -c 'prog.debug: .*, not used' "$WORK/$name.stderr")" = 1 ] || cat "$WORK/$name.stderr"
	[ -n "${VERBOSE:-}" ] && cat "$WORK/$name.stderr"
	alive "$name"
}

run d1-100g 100G
sigterm_within d1-sigterm 1 -p "$TPID" -d 60s -o "$WORK/d1t.pb.gz" --no-line-cache
kill -9 "$TPID" 2>/dev/null
run d2-1g-sparse 1G
kill -9 "$TPID" 2>/dev/null
finish
