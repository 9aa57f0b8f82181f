#!/usr/bin/env bash
# sampler: both
# The target never notices: a program that counts EINTR (and spurious
# wake-ups) in epoll_wait, select, poll, nanosleep, read, pthread_cond_wait
# and sem_wait sees zero while it is profiled, again and again, with every
# profile type; no thread is ever left stopped; and it keeps running. A
# "flapper" thread that spins 20 us then sleeps 1 ms in epoll_wait races
# the CPU profiler at 1000 Hz, so the EINTR repair path is exercised too.
. "$(dirname "$0")/lib.sh"

start_target parking
tp=$TPID
fixed=0
for round in 1 2 3; do
	"$ATTACH" -p "$tp" -t threads -o "$WORK/t.pb.gz" -q || fail "threads capture $round failed"
	not_stopped "$tp" || fail "threads capture $round left a thread stopped"
	"$ATTACH" -p "$tp" -t wall -d 1s -o "$WORK/w.pb.gz" -q || fail "wall capture $round failed"
	not_stopped "$tp" || fail "wall capture $round left a thread stopped"
	"$ATTACH" -p "$tp" -t cpu -d 2s -F 1000 --stats -o "$WORK/c.pb.gz" 2>"$WORK/c.err" ||
		fail "cpu capture $round failed"
	not_stopped "$tp" || fail "cpu capture $round left a thread stopped"
	f=$(sed -n 's/.* \([0-9]*\) EINTRs turned into restarts.*/\1/p' "$WORK/c.err")
	fixed=$((fixed + ${f:-0}))
done
check "9 captures (threads, wall, cpu x3) left no thread stopped" not_stopped "$tp"
sleep 0.2
tick=$(last_tick "$WORK/parking.out")
echo "target: $tick; EINTRs caused by the race and repaired: $fixed"
check "no wait in the target was disturbed" [ "$(echo "$tick" | awk '{ print $2 }')" = 0 ]
s0=$(echo "$tick" | awk '{ print $3 }')
sleep 0.3
s1=$(last_tick "$WORK/parking.out" | awk '{ print $3 }')
check "target still making progress ($s0 -> $s1)" [ "$s1" -gt "$s0" ]
finish
