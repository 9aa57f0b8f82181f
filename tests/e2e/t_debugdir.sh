#!/usr/bin/env bash
# --debug-dir DIR (issue 29): a stripped program's debug file copied to a
# directory of the user's own (a machine without network or -dbgsym
# packages) names its functions, found there by build ID (the .build-id
# layout, or NAME.debug) or by its debug link (CRC checked); without the
# option, or with a file whose build ID is not the object's, the name is
# not used (and a note says why).
. "$(dirname "$0")/lib.sh"

BIN=$TARGETS/hostile_paths_target
command -v objcopy >/dev/null || { echo "objcopy not installed: skipped"; finish; }
BID=$(readelf -n "$BIN" | awk '/Build ID/ { print $3 }')
check "the target has a build ID ($BID)" [ -n "$BID" ]
# A debug file of BIN whose name for its hot function is NAME.
make_debug() {
	cp "$BIN" "$WORK/full.tmp"
	objcopy --redefine-sym "hostile_hot=$2" "$WORK/full.tmp"
	objcopy --only-keep-debug "$WORK/full.tmp" "$1"
	[ "${3:-}" = nobid ] && objcopy --remove-section .note.gnu.build-id "$1"
	rm -f "$WORK/full.tmp"
}
mkdir -p "$WORK/bin" "$WORK/d1/.build-id/${BID:0:2}" "$WORK/d2" "$WORK/d3" "$WORK/lk"
objcopy --strip-all "$BIN" "$WORK/bin/prog"
make_debug "$WORK/d1/.build-id/${BID:0:2}/${BID:2}.debug" by_build_id_dir
make_debug "$WORK/d2/prog.debug" by_name_dir
make_debug "$WORK/lk/prog.dbg" by_link_dir
cp "$WORK/lk/prog.dbg" "$WORK/d3/prog.dbg"
(cd "$WORK/lk" && objcopy --add-gnu-debuglink=prog.dbg "$WORK/bin/prog")
rm "$WORK/lk/prog.dbg"
mkdir -p "$WORK/d4"
make_debug "$WORK/d4/prog.debug" wrong_build_id nobid

"$WORK/bin/prog" >"$WORK/prog.out" 2>&1 &
TPID=$!
PIDS="$PIDS $TPID"
for _ in $(seq 1 100); do grep -q ready "$WORK/prog.out" && break; sleep 0.05; done

# capture NAME ARGS...: a 1 s cpu profile, its function names in NAME.txt.
capture() {
	local name=$1
	shift
	"$ATTACH" -p "$TPID" -d 1s --no-line-cache -o "$WORK/$name.pb.gz" "$@" 2>"$WORK/$name.err"
	"$PBDUMP" "$WORK/$name.pb.gz" >"$WORK/$name.txt"
}
capture none
check "without --debug-dir: no debug name" sh -c "! grep -q '_dir' '$WORK/none.txt'"
capture d1 --debug-dir "$WORK/d1"
check "DIR/.build-id/xx/rest.debug names the hot function" grep -q by_build_id_dir "$WORK/d1.txt"
capture d2 --debug-dir "$WORK/d4" --debug-dir "$WORK/d2"
check "DIR/NAME.debug names it (after a directory with no match)" grep -q by_name_dir "$WORK/d2.txt"
check "a file whose build ID is not the object's is not used" \
	sh -c "! grep -q wrong_build_id '$WORK/d2.txt'"
check "... and a note says why" grep -q "its own build ID is not the object's" "$WORK/d2.err"
capture d3 --debug-dir "$WORK/d3"
check "DIR/LINK (the debug link's name, CRC checked) names it" grep -q by_link_dir "$WORK/d3.txt"
check "target left running" not_stopped "$TPID"
finish
