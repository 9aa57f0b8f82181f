#!/usr/bin/env bash
# sampler: both
# A frame never carries the name of a function it is not in. The asmsym
# target spins in asm_spin, hand-written assembly declared as x86inc
# declares its kernels (a global label, no type, no size), linked after
# crtstuff's frame_dummy (a function of size 0): asm_spin names at least
# 90% of the CPU (the rest is the C loop around it and the samplers'
# edges), frame_dummy none; the symbol table's view is checked first, so
# that a toolchain that types the label does not let the test pass idly.
. "$(dirname "$0")/lib.sh"

bin="$TARGETS/asmsym"
read -r type size < <(readelf -sW "$bin" | awk '$8 == "asm_spin" { print $4, $3; exit }')
check "asm_spin is an untyped symbol of size 0 in the target (${type:-none}, ${size:-none})" \
	[ "$type" = NOTYPE ] && [ "$size" = 0 ]
check "frame_dummy is a function of size 0 before it" \
	sh -c "readelf -sW '$bin' | awk '\$8 == \"frame_dummy\" && \$4 == \"FUNC\" && \$3 == 0 { f = 1 } END { exit !f }'"

start_target asmsym
"$ATTACH" -p "$TPID" -d 2s -o "$WORK/cpu.pb.gz" -q
rc=$?
check "cprof-attach exits 0 (got $rc)" [ "$rc" = 0 ]
spin=$(pprof_flat "$WORK/cpu.pb.gz" asm_spin)
dummy=$(go tool pprof -top -nodecount=1000 -symbolize=none "$WORK/cpu.pb.gz" 2>/dev/null | grep -c 'frame_dummy')
echo "asm_spin ${spin}% of the CPU (flat); frames named frame_dummy: $dummy"
check "asm_spin has at least 90% of the CPU ($spin%)" below 90 "$spin"
check "no frame is named frame_dummy ($dummy)" [ "$dummy" = 0 ]
check "target left running" not_stopped "$TPID"
finish
