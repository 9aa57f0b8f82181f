#!/usr/bin/env bash
# The profile satisfies its real consumer: go tool pprof -raw reads it
# without a warning, -symbolize=none -top shows function names (no binary
# needed), mapping[0] is the main executable with its build ID, and every
# non-leaf address in the executable is a call site: return address - 1,
# checked against objdump's disassembly.
. "$(dirname "$0")/lib.sh"

start_target stacks
"$ATTACH" -p "$TPID" -d 2s -o "$WORK/p.pb.gz" -q || fail "cprof-attach failed"
exe=$TARGETS/stacks

go tool pprof -raw "$WORK/p.pb.gz" >"$WORK/raw.txt" 2>"$WORK/raw.err"
rc=$?
check "go tool pprof -raw exits 0" [ "$rc" = 0 ]
check "go tool pprof -raw prints no warning ($(head -c 300 "$WORK/raw.err"))" [ ! -s "$WORK/raw.err" ]

go tool pprof -top -symbolize=none "$WORK/p.pb.gz" >"$WORK/top.txt" 2>"$WORK/top.err"
check "-symbolize=none -top prints no warning" [ ! -s "$WORK/top.err" ]
for f in cmp_slow main_spin recurse_bottom signal_victim; do
	check "-symbolize=none -top names $f" grep -q " $f\$" "$WORK/top.txt"
done
check "-top shows no bare addresses in the executable's hot functions" \
	sh -c "! awk 'NR > 6 && \$2 ~ /%/ && \$6 ~ /^0x/ && \$5 + 0 > 5' '$WORK/top.txt' | grep -q ."

bid=$(readelf -n "$exe" | awk '/Build ID/ { print $3 }')
m1=$(awk '/^Mappings/ { getline; print; exit }' "$WORK/raw.txt")
echo "mapping[0]: $m1"
check "mapping[0] is the main executable" sh -c "echo '$m1' | grep -q ' $exe '"
check "mapping[0] carries the executable's build ID ($bid)" sh -c "echo '$m1' | grep -q ' $bid '"

# Call sites: addresses of non-leaf frames in the executable, minus the
# mapping's bias, must be the last byte of a call instruction.
# (mawk has no strtonum; addresses fit a double exactly below 2^53.)
HEX='function hex(s,  i, c, v) { sub(/^0x/, "", s); v = 0; for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(tolower(s), i, 1)) - 1; v = v * 16 + c } return v }'
objdump -d --no-show-raw-insn "$exe" | awk "$HEX"'
	/^ *[0-9a-f]+:/ { x = $1; sub(":", "", x); a = hex(x); if (call) ends[a - 1] = 1; call = ($2 ~ /^call/) }
	END { for (e in ends) printf "%x\n", e }' | sort >"$WORK/callsites.txt"
awk -v exe="$exe" "$HEX"'
	/^Samples:/ { s = 1; next } /^Locations/ { s = 0; l = 1; next } /^Mappings/ { l = 0; m = 1; next }
	s && /^ *[0-9]+ +[0-9]+:/ { sub(/.*: */, ""); stacks[ns++] = $0 }
	l && /^ *[0-9]+:/ { id = $1; sub(":", "", id); addr[id] = $2; map[id] = $3; fn[id] = $4 }
	m && /^[0-9]+:/ { id = $1; sub(":", "", id); split($2, r, "/"); if ($3 == exe) { start[id] = r[1]; off[id] = r[3] }
		if ($0 ~ /kernel\.kallsyms/) kmap["M=" id] = 1 }
	END {
		# A frame interrupted by a signal is exact, not a call site: the
		# signal frame is always named so, even as a leaf (a sample
		# inside rt_sigreturn once named it __restore_rt). So is the user
		# frame below kernel frames (a sample in a system call: its
		# return address, where the thread stands).
		for (k = 0; k < ns; k++) {
			n = split(stacks[k], ids, " ")
			for (i = 2; i <= n; i++)
				if (fn[ids[i - 1]] != "[signal" && !(map[ids[i - 1]] in kmap)) nonleaf[ids[i]] = 1
		}
		for (id in nonleaf) {
			mm = map[id]; sub("M=", "", mm)
			if (!(mm in start)) continue
			printf "%x\n", hex(addr[id]) - hex(start[mm]) + hex(off[mm])
		}
	}' "$WORK/raw.txt" | sort -u >"$WORK/nonleaf.txt"
total=$(wc -l <"$WORK/nonleaf.txt")
true
bad=$(comm -23 "$WORK/nonleaf.txt" "$WORK/callsites.txt" | wc -l)
echo "non-leaf executable addresses: $total, not a call site: $bad"
[ "$bad" = 0 ] || comm -23 "$WORK/nonleaf.txt" "$WORK/callsites.txt" | head -5 | sed 's/^/  not a call site: 0x/' >&2
check "non-leaf executable addresses found" [ "$total" -ge 5 ]
check "every non-leaf address is a call site (return address - 1)" [ "$bad" = 0 ]

# Folded stacks: every line parses under flamegraph.pl's rule, hot function there.
"$ATTACH" -p "$TPID" -d 1s --format folded -o "$WORK/p.folded" -q
check "folded: written" [ -s "$WORK/p.folded" ]
check "folded: every line matches ^(.*)\\s+(\\d+)\$" sh -c "! grep -vP '^(.*)\\s+(\\d+)\$' '$WORK/p.folded' | grep -q ."
check "folded: the hot function is there, root first" grep -qE '^clone3;start_thread;.*;cmp_slow [0-9]+$' "$WORK/p.folded"
# Collapsed stacks carry bare numbers: cprof-attach says what they count.
"$ATTACH" -p "$TPID" -d 1s -t wall --format folded -o "$WORK/u.folded" 2>"$WORK/u.err"
check "folded: says its values are wall nanoseconds" grep -q 'its values are wall in nanoseconds$' "$WORK/u.err"
# Grouped by labels: every stack under its thread's name and state, the
# names the target's own; the summary lists the label keys the samples carry.
"$ATTACH" -p "$TPID" -d 1s -t wall --format folded --group-by thread,state -o "$WORK/g.folded" \
	-q --summary json >"$WORK/g.json"
names=$(cat /proc/"$TPID"/task/*/comm | sort -u | paste -sd'|')
check "--group-by: written" [ -s "$WORK/g.folded" ]
check "--group-by: every stack under thread=NAME;state=STATE of the target's threads" \
	sh -c "! grep -vE '^thread=($names);state=(running|runnable|sleeping|disk wait|stopped|zombie|idle|unknown);' '$WORK/g.folded' | grep -q ."
check "--group-by: the hot function under its thread" grep -qE '^thread=[^;]+;state=running;.*;cmp_slow [0-9]+$' "$WORK/g.folded"
check "--summary json lists the label keys ($(cat "$WORK/g.json"))" \
	grep -qE '"label_keys":\["state",("syscall",)?"thread","tid"\]' "$WORK/g.json"
check "--group-by with pprof output is refused, naming -tagroot" \
	sh -c "'$ATTACH' -p $TPID -d 1s --group-by thread -o /dev/null 2>&1 | grep -q tagroot"

# A binary deleted after it started still symbolizes (read through
# /proc/PID/map_files or /proc/PID/root, not its old path).
cp "$exe" "$WORK/doomed"
"$WORK/doomed" >"$WORK/doomed.out" 2>&1 &
dp=$!
PIDS="$PIDS $dp"
while ! grep -q ready "$WORK/doomed.out" 2>/dev/null; do sleep 0.05; done
rm "$WORK/doomed"
"$ATTACH" -p "$dp" -d 1s -o "$WORK/doomed.pb.gz" -q
check "a deleted binary still symbolizes (cmp_slow)" sh -c "go tool pprof -top -symbolize=none '$WORK/doomed.pb.gz' 2>/dev/null | grep -q ' cmp_slow\$'"
check "a deleted binary keeps its build ID" sh -c "'$PBDUMP' '$WORK/doomed.pb.gz' | grep '^mapping 1 ' | grep -q ' $bid '"
finish
