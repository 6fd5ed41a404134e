#!/usr/bin/env bash
# Compares two sidecar binaries (before and after a change) end to end:
# PK.PREPARE of random keys from redis-benchmark (-c 50 -r 1000000), in
# rounds that run the two in alternating order; prints each round's
# requests/s and the sidecar's CPU per request (/proc/PID/stat), and their
# medians.
#
# Usage: scripts/bench-pair.sh BEFORE_BIN AFTER_BIN BACKEND PIPELINE [ROUNDS]
#   BACKEND: memory:, file (a fresh directory per run) or redis (one redis-server
#            without persistence for all runs, emptied before each; its CPU per request
#            is printed too, and the requests are PK.PREPARE … PX 60000)
#   e.g.  git stash; scripts/build-sidecar.sh /tmp/before; git stash pop
#         scripts/build-sidecar.sh /tmp/after
#   (scripts/build-sidecar.sh builds the binary as the image does)
#         N=100000 scripts/bench-pair.sh /tmp/before /tmp/after memory: 1 5
set -euo pipefail
before=$1; after=$2; backend=$3; pipe=$4; rounds=${5:-5}; N=${N:-200000}
cpu() { awk -v hz="$(getconf CLK_TCK)" '{print int(($14+$15)*1000000/hz)}' "/proc/$1/stat"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rpid=0 extra=()
if [ "$backend" = redis ]; then
	rport=$(free_port); rdir=$(mktemp -d)
	redis-server --port "$rport" --bind 127.0.0.1 --dir "$rdir" --save '' --appendonly no >/dev/null 2>&1 &
	rpid=$!
	trap 'kill $rpid 2>/dev/null; rm -rf "$rdir"' EXIT
	for _ in $(seq 100); do redis-cli -p "$rport" PING >/dev/null 2>&1 && break; sleep 0.05; done
	extra=(PX 60000)
fi
run() { # BIN -> "rps cpu-us-per-request redis-cpu-us-per-request"
	local bin=$1 port dir be=$backend
	port=$(free_port); dir=$(mktemp -d)
	[ "$be" = file ] && be="file:$dir/d"
	if [ "$be" = redis ]; then
		# Every run starts from an empty keyspace, so that each grows (and
		# rehashes) alike: a keyspace carried over made the rehashes fall
		# in the runs of one side.
		redis-cli -p "$rport" FLUSHALL >/dev/null
		be="redis://127.0.0.1:$rport"
	fi
	"$bin" --listen "127.0.0.1:$port" --backend "$be" --log-level warn >/dev/null 2>&1 &
	local pid=$!
	for _ in $(seq 200); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
	local c0 c1 r0=0 r1=0 r
	c0=$(cpu $pid); [ "$rpid" = 0 ] || r0=$(cpu $rpid)
	r=$(redis-benchmark -p "$port" -c 50 -n "$N" -r 1000000 -P "$pipe" --csv PK.PREPARE "ns$RANDOM" k:__rand_int__ v "${extra[@]}" 2>/dev/null | awk -F'"' 'NR==2 {print int($4)}')
	c1=$(cpu $pid); [ "$rpid" = 0 ] || r1=$(cpu $rpid)
	kill $pid; wait $pid 2>/dev/null || true; rm -rf "$dir"
	echo "$r $(awk -v a="$c0" -v b="$c1" -v n="$N" 'BEGIN {printf "%.2f", (b-a)/n}') $(awk -v a="$r0" -v b="$r1" -v n="$N" 'BEGIN {printf "%.2f", (b-a)/n}')"
}
br=(); ar=(); bc=(); ac=(); brc=(); arc=()
for i in $(seq "$rounds"); do
	if (( i % 2 )); then x=($(run "$before")); y=($(run "$after")); else y=($(run "$after")); x=($(run "$before")); fi
	br+=("${x[0]}"); bc+=("${x[1]}"); brc+=("${x[2]}"); ar+=("${y[0]}"); ac+=("${y[1]}"); arc+=("${y[2]}")
done
med() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a/b}'; }
echo "$backend P=$pipe requests/s before=${br[*]} after=${ar[*]} | median $(med "${br[@]}") -> $(med "${ar[@]}") ($(ratio "$(med "${ar[@]}")" "$(med "${br[@]}")")x)"
echo "$backend P=$pipe cpu-us/request before=${bc[*]} after=${ac[*]} | median $(med "${bc[@]}") -> $(med "${ac[@]}") ($(ratio "$(med "${ac[@]}")" "$(med "${bc[@]}")")x)"
if [ "$rpid" != 0 ]; then
	echo "$backend P=$pipe redis-server cpu-us/request before=${brc[*]} after=${arc[*]} | median $(med "${brc[@]}") -> $(med "${arc[@]}") ($(ratio "$(med "${arc[@]}")" "$(med "${brc[@]}")")x)"
fi
