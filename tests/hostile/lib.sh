# lib.sh — helpers of the hostile suite, on top of tests/e2e/lib.sh (its
# targets, WORK, PIDS, check/pass/fail and the cleanup on exit).
#
# The attacker: an unprivileged user (nobody) in a user and mount namespace
# of its own (unshare -Urm), who controls its files and its memory; the
# victim: cprof-attach run as root against it. Every check states its
# bound, so that a failure says by how much.

# shellcheck source=../e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

# The attacker's identity for setpriv: a user with no files of its own.
ATTACKER_UID=${ATTACKER_UID:-65534}
ATTACKER_GID=${ATTACKER_GID:-65534}
# A directory the attacker owns, for its files and symlinks.
AWORK=$WORK/attacker
mkdir -p "$AWORK"
chmod 755 "$WORK"
chown "$ATTACKER_UID:$ATTACKER_GID" "$AWORK"

# A secret the attacker cannot read and must never see in a profile.
SECRET_TEXT="cprof-secret-$$-$RANDOM"
SECRET=$WORK/secret
printf '%s\n' "$SECRET_TEXT" >"$SECRET"
chmod 600 "$SECRET"

# as_attacker CMD...: run CMD as the unprivileged attacker.
as_attacker() {
	setpriv --reuid="$ATTACKER_UID" --regid="$ATTACKER_GID" --clear-groups \
		--inh-caps=-all -- "$@"
}

# start_hostile NAME CMD...: start CMD in the background (stdout to
# $WORK/NAME.out), wait for its "ready" line, set TPID to the process
# that prints it (CMD may be a wrapper: the target writes "ready PID").
start_hostile() {
	local name=$1 i pid
	shift
	rm -f "$WORK/$name.out"
	"$@" >"$WORK/$name.out" 2>&1 &
	PIDS="$PIDS $!"
	for i in $(seq 1 200); do
		if grep -q '^ready' "$WORK/$name.out" 2>/dev/null; then
			pid=$(sed -n 's/^ready \([0-9][0-9]*\).*/\1/p' "$WORK/$name.out" | head -1)
			TPID=${pid:-$!}
			PIDS="$PIDS $TPID"
			return 0
		fi
		sleep 0.05
	done
	echo "hostile target $name did not start: $(head -c 500 "$WORK/$name.out")" >&2
	exit 1
}

# bounded NAME MAX_S MAX_RSS_MIB ATTACH-ARGS...: run cprof-attach with a
# hard timeout of 3 x MAX_S, its stdout and stderr in $WORK/NAME.stdout and
# .stderr; check that it ended within MAX_S seconds and its peak RSS stayed
# under MAX_RSS_MIB. RC is its exit status, SECS its wall time, RSS_MIB
# its peak resident set.
bounded() {
	local name=$1 max_s=$2 max_rss=$3 t0 t1
	shift 3
	# Under ASan (make check SANITIZE=...) every allocation carries a
	# redzone and freed memory waits in a 256 MiB quarantine, and a stop or
	# a parse takes several times longer: the bounds widen by that much.
	if [ "$SANITIZED" = 1 ]; then
		max_rss=$((max_rss * 2 + 512))
		max_s=$((max_s * 3))
	fi
	t0=$(date +%s.%N)
	timeout -s KILL $((max_s * 3)) /usr/bin/time -f '%M' -o "$WORK/$name.time" \
		"$ATTACH" "$@" >"$WORK/$name.stdout" 2>"$WORK/$name.stderr"
	RC=$?
	t1=$(date +%s.%N)
	SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	RSS_KIB=$(tail -1 "$WORK/$name.time" 2>/dev/null | grep -x "[0-9]*")
	RSS_MIB=$(( ${RSS_KIB:-0} / 1024 ))
	echo "   $name: exit $RC, ${SECS}s, peak RSS ${RSS_MIB} MiB"
	check "$name ends within ${max_s}s (${SECS}s)" awk -v s="$SECS" -v m="$max_s" 'BEGIN { exit !(s < m) }'
	check "$name peak RSS under ${max_rss} MiB (${RSS_MIB})" test "$RSS_MIB" -lt "$max_rss"
}

# term_when NAME COND ATTACH-ARGS...: start cprof-attach, wait until the
# shell condition COND holds (the phase to interrupt has begun; at most
# 120 s), send SIGTERM and check that it exits within 2 s. RC, SECS.
term_when() {
	local name=$1 cond=$2 p t0 t1 i
	shift 2
	"$ATTACH" "$@" >"$WORK/$name.stdout" 2>"$WORK/$name.stderr" &
	p=$!
	for i in $(seq 1 1200); do
		eval "$cond" && break
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	t0=$(date +%s.%N)
	kill -TERM "$p" 2>/dev/null
	for i in $(seq 1 200); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.05
	done
	t1=$(date +%s.%N)
	if kill -0 "$p" 2>/dev/null; then
		fail "$name: still running 10 s after SIGTERM"
		kill -KILL "$p" 2>/dev/null
	fi
	wait "$p"
	RC=$?
	SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	check "$name: SIGTERM ends it within 2 s (${SECS}s, exit $RC)" \
		awk -v s="$SECS" 'BEGIN { exit !(s < 2) }'
}

# sigterm_within NAME SECONDS ATTACH-ARGS...: term_when after SECONDS.
sigterm_within() {
	local name=$1 after=$2
	shift 2
	term_when "$name" "sleep $after; true" "$@"
}

# no_text NAME TEXT FILE...: TEXT is in none of the files (profiles are
# gzipped: each file is read through zcat when it is one).
no_text() {
	local name=$1 text=$2 f
	shift 2
	for f in "$@"; do
		[ -e "$f" ] || continue
		if { zcat -f "$f" 2>/dev/null; cat "$f"; } | grep -aq "$text"; then
			fail "$name: $text is in $f"
			return 1
		fi
	done
	pass "$name: $text is in none of the outputs"
}

# no_secret NAME FILE...: the secret's text is in none of the files.
no_secret() {
	local name=$1
	shift
	no_text "$name" "$SECRET_TEXT" "$@"
}

# alive NAME: the target is still running and not stopped (state not T/t).
alive() {
	local st
	st=$(awk '{ print $3 }' "/proc/$TPID/stat" 2>/dev/null)
	check "$1: the target runs on (state ${st:-gone})" test -n "$st" -a "$st" != T -a "$st" != t
}

# finish: exit with the test's status.
finish() {
	exit "$FAILED"
}

# bounds_so SRC OUT [CFLAGS...]: the small shared object the h_bounds tests
# load and then make hostile (bounds_work() spins in bounds_hot()): its C
# source written to SRC, built into OUT.
bounds_so() {
	local src=$1 out=$2
	shift 2
	cat >"$src" <<'C'
volatile unsigned long bounds_sink;
__attribute__((noinline)) static void bounds_hot(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		bounds_sink += i * 7;
}
__attribute__((visibility("default"))) void bounds_work(unsigned n) { bounds_hot(n); }
C
	${CC:-cc} -O2 "$@" -shared -fPIC -fvisibility=hidden -o "$out" "$src"
}
