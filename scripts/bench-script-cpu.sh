#!/usr/bin/env bash
# Redis's own CPU per PK.PREPARE inside one script call, with the network
# and the sidecar taken out: redis-cli --pipe of CALLS EVALSHAs of a
# block.lua, each with OPS prepares of fresh keys (PX 60000, retention
# 24 h, as the sidecar sends them), to an otherwise idle redis-server
# without persistence; its CPU (utime + stime from /proc) per prepare.
# Rounds alternate between the scripts given; a fresh server each time.
#
# Usage: scripts/bench-script-cpu.sh [ROUNDS] SCRIPT.lua...
#   e.g. git show main:backend/redis/lua/block.lua > /tmp/block-main.lua
#        scripts/bench-script-cpu.sh 4 /tmp/block-main.lua backend/redis/lua/block.lua
# A script named *minimal* (scripts/prepare-minimal.lua) gets one key a
# call (KEYS[1], ARGV value ttl), CALLS*OPS calls.
set -euo pipefail
rounds=$1; shift
CALLS=${CALLS:-10000}; OPS=${OPS:-16}
hz=$(getconf CLK_TCK)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
one() { # SCRIPT -> CPU us per prepare
	local src=$1 port dir pid sha c0 c1
	port=$(free_port); dir=$(mktemp -d)
	redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
	sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat "$src")")
	local gen
	case $src in
	*minimal*) gen() { awk -v n=$((CALLS * OPS)) -v sha="$sha" 'BEGIN { for (i = 0; i < n; i++) { k = "pk:{ns:k" i "}"; printf "*6\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n1\r\n$%d\r\n%s\r\n$1\r\nv\r\n$5\r\n60000\r\n", sha, length(k), k } }'; } ;;
	*) gen() { awk -v calls="$CALLS" -v ops="$OPS" -v sha="$sha" 'BEGIN {
		for (c = 0; c < calls; c++) {
			printf "*%d\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$%d\r\n%d\r\n", 4 + ops * 5, sha, length(ops ""), ops
			for (i = 0; i < ops; i++) { k = "pk:{ns:k" (c * ops + i) "}"; printf "$%d\r\n%s\r\n", length(k), k }
			printf "$8\r\n86400000\r\n"
			for (i = 0; i < ops; i++) printf "$1\r\np\r\n$1\r\nv\r\n$1\r\na\r\n$5\r\n60000\r\n"
		} }'; } ;;
	esac
	gen >"$dir/in"
	c0=$(awk '{print $14+$15}' "/proc/$pid/stat")
	redis-cli -p "$port" --pipe <"$dir/in" >"$dir/out"
	c1=$(awk '{print $14+$15}' "/proc/$pid/stat")
	grep -q 'errors: 0' "$dir/out" || { cat "$dir/out" >&2; exit 1; }
	kill "$pid"; wait "$pid" 2>/dev/null || true; rm -rf "$dir"
	awk -v a="$c0" -v b="$c1" -v hz="$hz" -v n=$((CALLS * OPS)) 'BEGIN {printf "%.2f", (b - a) * 1000000 / hz / n}'
}
declare -A got
for r in $(seq "$rounds"); do
	if (( r % 2 )); then order=("$@"); else order=(); for ((i = $#; i >= 1; i--)); do order+=("${!i}"); done; fi
	for s in "${order[@]}"; do got[$s]="${got[$s]:-} $(one "$s")"; done
done
for s in "$@"; do echo "$s: redis CPU us/prepare per round:${got[$s]}"; done
