#!/usr/bin/env bash
# Counts the sidecar's instructions per request under valgrind's callgrind (perf
# stat has no hardware counters in the test container). Instrumentation is on
# only while N PK.PREPARE of random keys run (redis-benchmark -c 50 -r 1000000,
# after 2,000 of warm-up), for the sidecar process alone; the requests are
# bench-pair.sh's (PX 60000 on redis only: on file:, a prepare with PX counts
# 35k instructions against 21k without). The count does not depend on the CPU's
# speed; how many requests share a batch and the runtime's own work (sysmon, the
# scheduler) still move it a little. A run with a GC cycle in its window reads
# 20 % to 45x more; run each binary three times or more, alternating, and
# compare medians.
#
# Usage: scripts/callgrind-count.sh BIN BACKEND PIPELINE N
#   BIN: built with symbols for per-function figures (callgrind_annotate on the
#        kept output), e.g. CGO_ENABLED=0 go build -trimpath -o /tmp/sidecar-sym ./cmd/sidecar
#   BACKEND: memory:, file (a fresh directory) or redis (a fresh redis-server
#            without persistence; the requests carry PX 60000)
#   prints: BIN BACKEND PIPELINE N instructions/request OUTPUT-FILE
set -euo pipefail
bin=$(realpath "$1"); backend=$2; pipe=$3; n=$4
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
dir=$(mktemp -d); port=$(free_port); rpid=0 pid=0 extra=() be=$backend
cleanup() { [ $pid != 0 ] && kill $pid 2>/dev/null; [ $rpid != 0 ] && kill $rpid 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT
case $backend in
file) be="file:$dir/data" ;;
redis)
	rport=$(free_port)
	redis-server --port "$rport" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no >/dev/null 2>&1 &
	rpid=$!
	for _ in $(seq 100); do redis-cli -p "$rport" PING >/dev/null 2>&1 && break; sleep 0.05; done
	be="redis://127.0.0.1:$rport" extra=(PX 60000) ;;
esac
# cpu.rdtscp=off: valgrind 3.19 lacks RDTSCP; asyncpreemptoff: its signal handling.
(cd "$dir" && GODEBUG=cpu.rdtscp=off,asyncpreemptoff=1 exec valgrind --tool=callgrind \
	--instr-atstart=no "$bin" --listen "127.0.0.1:$port" --backend "$be" --log-level warn \
	>/dev/null 2>"$dir/valgrind.log") &
pid=$!
for _ in $(seq 200); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
bench() { redis-benchmark -p "$port" -c 50 -n "$1" -r 1000000 -P "$pipe" PK.PREPARE ns k:__rand_int__ v "${extra[@]}" >/dev/null 2>&1; }
bench 2000
callgrind_control -i on $pid >/dev/null 2>&1
bench "$n"
callgrind_control -i off $pid >/dev/null 2>&1
callgrind_control -d $pid >/dev/null 2>&1
out=""
for _ in $(seq 100); do
	out=$(ls "$dir"/callgrind.out.*.1 2>/dev/null | head -1) && [ -n "$out" ] && break
	sleep 0.1
done
total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
kept=/tmp/callgrind.$(basename "$bin").$backend$pipe.$$
cp "$out" "$kept"
echo "$1 $backend $pipe $n $((total / n)) $kept"
cleanup; pid=0 rpid=0
rm -rf "$dir"
