#!/usr/bin/env bash
# h_paths_debug — a stripped object's debug file paths as a way out (issue
# 25). The attacker runs a stripped copy of its program whose only name for
# its hot function would come from a debug file, and points the lookup at
# a file it must not get: from a root of its own (chroot in its user and
# mount namespace) to a world-readable debug file outside it, (b1) by the
# .gnu_debuglink name beside it, a link to an absolute path, (b2) the
# same by "../../..", (b3) by its build-ID path, a link to an absolute
# path; in the host's root, to a root-only debug file, (b4) by debug link,
# (b5) by build ID (a tmpfs of its own over /usr/lib/debug); (b6) a debug
# file of its own whose build ID is not the object's. In every case the
# debug file's name for the function must not reach the profile; each
# capture ends within 10 s under 150 MiB and leaves the target running.
# (b7), the control: a debug file of its own beside it in its root names
# the function.
. "$(dirname "$0")/lib.sh"

BIN=$TARGETS/hostile_paths_target
OUTSIDE_TEXT="cprof-outside-$$-$RANDOM"
WRONG_TEXT="cprof-wrong-build-id-$$"
BID=$(readelf -n "$BIN" | awk '/Build ID/ { print $3 }')
BIDPATH=usr/lib/debug/.build-id/${BID:0:2}/${BID:2}.debug
mkdir -p "$WORK/lk" /usr/lib/debug

# make_debug FILE NAME MODE [nobid]: a debug file of BIN naming its hot function NAME.
make_debug() {
	cp "$BIN" "$WORK/full.tmp"
	objcopy --redefine-sym "hostile_hot=$2" "$WORK/full.tmp"
	objcopy --only-keep-debug "$WORK/full.tmp" "$1"
	[ "${4:-}" = nobid ] && objcopy --remove-section .note.gnu.build-id "$1"
	chmod "$3" "$1"
	rm -f "$WORK/full.tmp"
}

# make_stripped OUT [DEBUG]: BIN stripped to OUT, its debug link naming
# OUT's name + .debug with DEBUG's CRC.
make_stripped() {
	mkdir -p "$(dirname "$1")"
	objcopy --strip-all "$BIN" "$1"
	if [ -n "${2:-}" ]; then
		cp "$2" "$WORK/lk/$(basename "$1").debug"
		(cd "$WORK/lk" && objcopy --add-gnu-debuglink="$(basename "$1").debug" "$1")
	fi
}

# run CASE TEXT CMD...: start the attacker's CMD, capture, check.
run() {
	local name=$1 text=$2
	shift 2
	chown -R "$ATTACKER_UID:$ATTACKER_GID" "$AWORK"
	start_hostile "$name" as_attacker unshare -Urm "$@"
	bounded "$name" 10 150 -p "$TPID" -d 1s -o "$WORK/$name.pb.gz" --no-line-cache
	check "$name: the capture completes (exit $RC)" [ "$RC" = 0 ]
	check "$name: the profile is written" [ -s "$WORK/$name.pb.gz" ]
	no_text "$name" "$text" "$WORK/$name.pb.gz" "$WORK/$name.stdout" "$WORK/$name.stderr"
	no_secret "$name" "$WORK/$name.pb.gz" "$WORK/$name.stdout" "$WORK/$name.stderr"
	[ -n "${VERBOSE:-}" ] && cat "$WORK/$name.stderr"
	alive "$name"
	kill -9 "$TPID" 2>/dev/null
}

make_debug "$WORK/secret.debug" "$SECRET_TEXT" 600
make_debug "$WORK/outside.debug" "$OUTSIDE_TEXT" 644

# (b1) Debug link, absolute link out of its root.
R=$AWORK/r1
make_stripped "$R/bin/prog" "$WORK/outside.debug"
ln -s "$WORK/outside.debug" "$R/bin/prog.debug"
run b1-link-absolute "$OUTSIDE_TEXT" "$R/bin/prog" --chroot "$R"

# (b2) Debug link, ../.. out of its root.
R=$AWORK/r2
make_stripped "$R/bin/prog" "$WORK/outside.debug"
ln -s "../../../../../../../../../..$WORK/outside.debug" "$R/bin/prog.debug"
run b2-link-dotdot "$OUTSIDE_TEXT" "$R/bin/prog" --chroot "$R"

# (b3) Build ID, absolute link out of its root.
R=$AWORK/r3
make_stripped "$R/bin/prog"
mkdir -p "$(dirname "$R/$BIDPATH")"
ln -s "$WORK/outside.debug" "$R/$BIDPATH"
run b3-buildid-absolute "$OUTSIDE_TEXT" "$R/bin/prog" --chroot "$R"

# (b4) Debug link to a root-only file, in the host's root.
make_stripped "$AWORK/b4/prog" "$WORK/secret.debug"
ln -s "$WORK/secret.debug" "$AWORK/b4/prog.debug"
run b4-link-root-only "$SECRET_TEXT" "$AWORK/b4/prog"

# (b5) Build ID to a root-only file, under a /usr/lib/debug of its own.
make_stripped "$AWORK/b5/prog"
run b5-buildid-root-only "$SECRET_TEXT" sh -c \
	'mount -t tmpfs cprof-attacker /usr/lib/debug && mkdir -p "$(dirname "/$1")" &&
	ln -s "$2" "/$1" && exec "$3"' sh "$BIDPATH" "$WORK/secret.debug" "$AWORK/b5/prog"

# (b6) A debug file of its own by build ID, whose own build ID is not the object's.
make_debug "$AWORK/wrong.debug" "$WRONG_TEXT" 644 nobid
make_stripped "$AWORK/b6/prog"
run b6-buildid-mismatch "$WRONG_TEXT" sh -c \
	'mount -t tmpfs cprof-attacker /usr/lib/debug && mkdir -p "$(dirname "/$1")" &&
	cp "$2" "/$1" && exec "$3"' sh "$BIDPATH" "$AWORK/wrong.debug" "$AWORK/b6/prog"
check "b6-buildid-mismatch: a note says why it was not used" \
	grep -q "build ID is not the object's" "$WORK/b6-buildid-mismatch.stderr"

# (b7) The control: its own debug file beside it, inside its root.
R=$AWORK/r7
make_debug "$WORK/own.debug" own_debug_name 644
make_stripped "$R/bin/prog" "$WORK/own.debug"
cp "$WORK/own.debug" "$R/bin/prog.debug"
run b7-own "$SECRET_TEXT" "$R/bin/prog" --chroot "$R"
check "b7-own: its own debug file names the function" \
	sh -c "zcat '$WORK/b7-own.pb.gz' | grep -aq own_debug_name"
finish
