#!/usr/bin/env bash
# The shim on top of other allocators: heapload linked against jemalloc,
# tcmalloc and mimalloc (where installed) runs correctly under the shim
# and its in-use bytes per function are within 15% of the known live sets
# at a 64 KiB rate; a program calling mallopt, malloc_trim, malloc_info
# (on glibc and on jemalloc) keeps its data and its profile; a program
# that dlopens a library bringing its own allocator works; Debian's
# redis-server (jemalloc) starts, serves a bounded redis-benchmark and
# gives a heap profile. Missing allocators are skipped with a message.
. "$(dirname "$0")/lib.sh"

SHIM=$B/libcprof.so

# value INDEX FUNCTION FILE: sum of sample value INDEX over stacks whose leaf is FUNCTION.
value() {
	awk -v i="$1" -v f="$2" '/^sample / { split($2, v, ","); s = $0; sub(/.* stack /, "", s); n = split(s, fr, ";"); if (fr[n] == f) t += v[i] } END { print t + 0 }' "$3"
}

# profile PID NAME: the heap profile of PID, dumped to $WORK/NAME.txt.
profile() {
	"$ATTACH" -p "$1" -t heap -o "$WORK/$2.pb.gz" 2>"$WORK/$2.err"
	check "$2: heap capture exits 0" [ $? = 0 ] || cat "$WORK/$2.err" >&2
	"$PBDUMP" "$WORK/$2.pb.gz" >"$WORK/$2.txt"
}

for a in jemalloc tcmalloc mimalloc; do
	if [ ! -x "$TARGETS/heapload-$a" ]; then
		echo "skip: heapload-$a not built (lib$a is not installed: scripts/install-deps test)"
		continue
	fi
	LD_PRELOAD=$SHIM CPROF_SAMPLE_RATE=64k start_target "heapload-$a"
	tp=$TPID
	check "$a: the program's allocator is mapped" grep -q "lib$a" /proc/"$tp"/maps
	profile "$tp" "$a"
	check "$a: cprof-attach names the allocator" grep -q "on top of .*lib$a" "$WORK/$a.err"
	for spec in keep_small:81920000 keep_big:8388608 keep_calloc:64000000 keep_realloc:4194304 keep_aligned:65536000; do
		f=${spec%:*}
		want=${spec#*:}
		got=$(value 4 "$f" "$WORK/$a.txt")
		check "$a: $f in use: $got bytes, truth $want (within 15%)" near "$got" "$want" "$((want * 15 / 100))"
	done
	got=$(value 2 churn "$WORK/$a.txt")
	check "$a: churn allocated $got bytes, truth 1073741824 (within 15%)" near "$got" 1073741824 161061273
	check "$a: still running" kill -0 "$tp"
done

# glibc's extensions, on glibc and on jemalloc.
for t in mallocext mallocext-jemalloc; do
	[ -x "$TARGETS/$t" ] || { echo "skip: $t not built"; continue; }
	LD_PRELOAD=$SHIM CPROF_SAMPLE_RATE=64k start_target "$t"
	profile "$TPID" "$t"
	got=$(value 4 keep_ext "$WORK/$t.txt")
	check "$t: mallopt, malloc_trim, malloc_info run; keep_ext in use $got bytes, truth 65536000 (within 15%)" \
		near "$got" 65536000 9830400
done

# A plugin with its own allocator, dlopened.
if [ -f "$TARGETS/libheapplugin.so" ]; then
	# jemalloc's initial-exec TLS needs room in the static TLS block to be
	# dlopened at all, shim or not: the tunable its users set.
	GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 LD_PRELOAD=$SHIM CPROF_SAMPLE_RATE=64k \
		start_target dlalloc "$TARGETS"
	profile "$TPID" dlalloc
	got=$(value 4 plugin_keep "$WORK/dlalloc.txt")
	check "dlopen'ed jemalloc plugin: plugin_keep in use $got bytes, truth 65536000 (within 15%)" \
		near "$got" 65536000 9830400
else
	echo "skip: libheapplugin.so not built (needs libjemalloc-dev)"
fi

# Debian's redis-server, which links jemalloc.
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	# A port nobody answers on, from 6390 up; and the server that answers must be ours.
	port=6390
	while redis-cli -p $port ping >/dev/null 2>&1 && [ $port -lt 6399 ]; do port=$((port + 1)); done
	LD_PRELOAD=$SHIM redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no >"$WORK/redis.out" 2>&1 &
	rp=$!
	PIDS="$PIDS $rp"
	for i in $(seq 1 100); do
		redis-cli -p $port ping >/dev/null 2>&1 && break
		sleep 0.05
	done
	check "redis-server starts under the shim (pid $rp, port $port)" sh -c "
		redis-cli -p $port info server | tr -d '\r' | grep -qx 'process_id:$rp'" || tail -5 "$WORK/redis.out" >&2
	redis-benchmark -p $port -n 20000 -q -t set,get,lpush,sadd -d 1000 >"$WORK/bench.out" 2>&1
	check "redis-benchmark completes ($(tr '\r' '\n' <"$WORK/bench.out" | grep -c 'requests per second') tests)" \
		[ "$(tr '\r' '\n' <"$WORK/bench.out" | grep -c 'requests per second')" = 4 ] ||
		{ tail -5 "$WORK/redis.out" "$WORK/bench.out" >&2; }
	profile "$rp" redis
	check "redis: the heap profile has zmalloc's stacks" grep -Eq 'z(malloc|calloc|realloc)' <(go tool pprof -top -symbolize=none "$WORK/redis.pb.gz" 2>/dev/null)
	check "redis-server still running" kill -0 "$rp"
	redis-cli -p $port shutdown nosave >/dev/null 2>&1
else
	echo "skip: redis-server or redis-benchmark not installed"
fi
finish
