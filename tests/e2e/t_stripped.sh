#!/usr/bin/env bash
# Stripped code keeps its function structure (issue 16): manyfn-stripped
# has no .symtab, and its four hot static functions are named by the
# start of their FDEs, "manyfn-stripped+0xOFF" with OFF an ELF address.
# Profiled twice (two processes, two load addresses): four distinct hot
# functions from the binary each time, the same four names both times,
# each the start of a function of the unstripped build (nm). go tool
# pprof -top (flat) and cprof-attach's own --top list them; folded and
# SVG carry the same names, never a bare runtime address.
. "$(dirname "$0")/lib.sh"

exe=$TARGETS/manyfn-stripped
check "manyfn-stripped has no .symtab" sh -c "! readelf -S '$exe' | grep -q ' .symtab '"

# PROFILE: the binary's four hottest functions (flat). Not a floor: on a
# loaded machine the target gets a third of a CPU, 106 samples in 3 s,
# and spin_d's 10% (10.6 samples, sd 3.1) fell under a 3% floor once in a
# loaded make check; the next hottest (the loop calling them) has ~0.
names_of() {
	go tool pprof -top -nodecount=1000 -symbolize=none "$1" 2>/dev/null |
		awk '$6 ~ /^manyfn-stripped\+0x/ && n < 4 { n++; print $6 }' | sort
}

for run in 1 2; do
	start_target manyfn-stripped
	"$ATTACH" -p "$TPID" -d 3s -o "$WORK/run$run.pb.gz" --top >"$WORK/top$run.txt" ||
		fail "run $run: capture failed"
	names_of "$WORK/run$run.pb.gz" >"$WORK/names$run.txt"
	"$ATTACH" -p "$TPID" -d 1s --format folded -o "$WORK/run$run.folded" -q
	kill -9 "$TPID"; wait "$TPID" 2>/dev/null
	echo "run $run: $(tr '\n' ' ' <"$WORK/names$run.txt")"
done
check "run 1: four distinct hot functions from the binary" [ "$(wc -l <"$WORK/names1.txt")" = 4 ]
check "run 2: the same four names" cmp -s "$WORK/names1.txt" "$WORK/names2.txt"
nm "$TARGETS/manyfn" | awk '$2 ~ /^[tT]$/ && $3 ~ /^spin_/ { print "manyfn-stripped+0x" $1 }' |
	sed 's/+0x0*/+0x/' | sort >"$WORK/starts.txt"
check "each name is the start of one of spin_a..spin_d (nm of the unstripped build)" \
	cmp -s "$WORK/names1.txt" "$WORK/starts.txt" || cat "$WORK/starts.txt"
check "--top lists them too" sh -c "[ \$(grep -c 'manyfn-stripped+0x' '$WORK/top1.txt') -ge 4 ]" ||
	cat "$WORK/top1.txt"
check "folded: the same names, no bare address" \
	sh -c "grep -q 'manyfn-stripped+0x' '$WORK/run1.folded' && ! grep -qE '(^|;)0x[0-9a-f]+(;| )' '$WORK/run1.folded'" ||
	head -5 "$WORK/run1.folded"
finish
