#!/usr/bin/env bash
# h_trust_spool — the push spool's default directory cannot be taken over
# by another user. Root runs --push without HOME or XDG_CACHE_HOME (a
# service's environment), where the spool used to fall back to the fixed
# name /tmp/cprof-spool-0, which the attacker creates first (a directory
# of its own, then a symlink to one): cprof must neither use it nor stop
# because of it; it spools under /var/cache/cprof, root's own, and the
# profile reaches the server. Run in a mount namespace of its own, with
# fresh tmpfs on /tmp and /var/cache, so nothing on the host is touched
# (its output leaves through descriptors opened outside: $WORK is hidden).
. "$(dirname "$0")/lib.sh"

PYRECV=$B/tests/tools/pyrecv
mkdir -p "$WORK/recv"
"$PYRECV" -d "$WORK/recv" >"$WORK/recv.port" 2>"$WORK/recv.err" &
PIDS="$PIDS $!"
for i in $(seq 1 100); do grep -qs '^port ' "$WORK/recv.port" && break; sleep 0.05; done
PORT=$(awk '/^port/ { print $2 }' "$WORK/recv.port")
start_hostile tgt as_attacker "$TARGETS/hostile_trust_names"

# spool_run NAME PLANT: in a fresh namespace, the attacker plants PLANT
# ("dir" or "link") at /tmp/cprof-spool-0, then root pushes one capture.
spool_run() {
	local name=$1 plant=$2
	# The attacher is reached through /mnt: a fresh /tmp hides a build
	# under /tmp (a clone there failed with "No such file or directory").
	unshare -m sh -c '
		mount --make-rprivate /
		mount --bind "$(dirname "$4")" /mnt
		mount -t tmpfs -o mode=1777 tmpfs /tmp
		mount -t tmpfs -o mode=755 tmpfs /var/cache
		case "$2" in
		dir) setpriv --reuid="$3" --regid="$3" --clear-groups -- mkdir -m 700 /tmp/cprof-spool-0 ;;
		link) setpriv --reuid="$3" --regid="$3" --clear-groups -- sh -c \
			"mkdir -m 777 /tmp/mine && ln -s /tmp/mine /tmp/cprof-spool-0" ;;
		esac
		t0=$(date +%s.%N)
		env -u HOME -u XDG_CACHE_HOME timeout -s KILL 30 /mnt/"$(basename "$4")" -p "$5" -d 200ms \
			--push "http://127.0.0.1:$6" --app trust 2>&3
		echo "rc $?"
		echo "secs $(awk -v a="$t0" -v b="$(date +%s.%N)" "BEGIN { printf \"%.2f\", b - a }")"
		echo "var $(stat -c "%U %a" /var/cache/cprof/spool 2>/dev/null)"
		echo "planted $(ls -A /tmp/cprof-spool-0/ 2>/dev/null | wc -l) $(ls -A /tmp/mine/ 2>/dev/null | wc -l)"
	' sh "$name" "$plant" "$ATTACKER_UID" "$ATTACH" "$TPID" "$PORT" >"$WORK/$name.out" \
		3>"$WORK/$name.stderr"
	cat "$WORK/$name.out" | sed 's/^/   /'
}

for plant in dir link; do
	before=$(ls "$WORK/recv" | wc -l)
	spool_run "spool-$plant" "$plant"
	out=$WORK/spool-$plant.out
	check "$plant planted at /tmp/cprof-spool-0: the push succeeds ($(sed -n 's/^rc //p' "$out"))" \
		grep -qx 'rc 0' "$out" || cat "$WORK/spool-$plant.stderr"
	check "... within 10 s ($(sed -n 's/^secs //p' "$out")s)" \
		awk '/^secs/ { exit !($2 < 10) }' "$out"
	check "... spooled in root's own /var/cache/cprof/spool, mode 700" grep -qx 'var root 700' "$out"
	check "... nothing written into the attacker's directory" grep -qx 'planted 0 0' "$out"
	check "... and the profile reached the server" test "$(ls "$WORK/recv" | wc -l)" -gt "$before"
done
alive tgt
finish
