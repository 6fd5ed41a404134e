#!/usr/bin/env bash
# Measures the sidecar side by side with the Redis it is compared to, in one
# run, with redis-benchmark (-c 50 -n 200000 -r 1000000) at pipeline 1 and 16:
#
#   memory:   sidecar PK.PREPARE    vs  SET k v NX PX 60000 on redis-server (no persistence)
#   file:     sidecar PK.PREPARE    vs  EVALSHA of prepare.lua on redis-server (appendfsync always)
#   redis://  sidecar PK.PREPARE    vs  EVALSHA of the same script sent directly to the same Redis,
#             plus CPU time per request of the sidecar and of redis-server
#   mongodb:  sidecar PK.PREPARE on FerretDB (a figure only; small -n), when PK_TEST_MONGO_URI is set
#
# Usage: scripts/bench.sh            (N=200000 CLIENTS=50 PIPELINES="1 16" to change)
# Needs redis-server, redis-cli and redis-benchmark (apt-get install redis-server redis-tools).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-200000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
RANGE=1000000
work=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-bench.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/sidecar" ./cmd/sidecar

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do redis-cli -p "$1" PING >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "port $1 did not answer" >&2; return 1; }

# redis NAME ARGS...: starts a redis-server; sets ${NAME}_port and ${NAME}_pid.
redis() {
	local name=$1; shift
	local port; port=$(free_port)
	mkdir -p "$work/$name"
	redis-server --port "$port" --bind 127.0.0.1 --dir "$work/$name" --save '' --daemonize no "$@" >"$work/$name.log" 2>&1 &
	pids+=($!)
	printf -v "${name}_port" %s "$port"; printf -v "${name}_pid" %s "$!"
	wait_port "$port"
}

# sidecar NAME BACKEND: starts the sidecar; sets ${NAME}_port and ${NAME}_pid.
sidecar() {
	local name=$1 backend=$2
	local port; port=$(free_port)
	"$work/sidecar" --listen "127.0.0.1:$port" --backend "$backend" --log-level warn >"$work/$name.log" 2>&1 &
	pids+=($!)
	printf -v "${name}_port" %s "$port"; printf -v "${name}_pid" %s "$!"
	wait_port "$port"
}

# rps PORT PIPELINE N ARGS...: requests per second of one redis-benchmark run.
rps() {
	local port=$1 pipe=$2 n=$3; shift 3
	redis-benchmark -p "$port" -c "$CLIENTS" -n "$n" -r "$RANGE" -P "$pipe" --csv "$@" 2>/dev/null |
		awk -F'"' 'NR==2 {print int($4)}'
}

# cpu PID: CPU time used so far in microseconds (utime+stime from /proc).
cpu() { awk -v hz="$(getconf CLK_TCK)" '{print int(($14+$15)*1000000/hz)}' "/proc/$1/stat"; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", (b > 0 ? a/b : 0)}'; }

redis plain --appendonly no
redis fsync --appendonly yes --appendfsync always
sidecar mem memory:
sidecar file "file:$work/data"
sidecar viaredis "redis://127.0.0.1:$plain_port"

sha=$(redis-cli -p "$plain_port" SCRIPT LOAD "$(cat backend/redis/lua/prepare.lua)")
redis-cli -p "$fsync_port" SCRIPT LOAD "$(cat backend/redis/lua/prepare.lua)" >/dev/null
# The sidecar's Redis key for (ns, key) is pk:{ns:key}; forever, 24h retention.
evalsha() { echo EVALSHA "$sha" 1 "pk:{$1:k:__rand_int__}" v n 0 86400000; }

echo "# prepkey bench: redis-benchmark -c $CLIENTS -n $N -r $RANGE, $(nproc) cores, $(redis-server --version | awk '{print $3}')"
for P in $PIPELINES; do
	echo
	echo "## pipeline $P"
	setnx=$(rps "$plain_port" "$P" "$N" SET "s$P:k:__rand_int__" v NX PX 60000)
	mem=$(rps "$mem_port" "$P" "$N" PK.PREPARE "m$P" "k:__rand_int__" v)
	printf '%-52s %8s req/s\n' "redis-server SET NX PX (no persistence)" "$setnx"
	printf '%-52s %8s req/s  %s of SET NX\n' "sidecar memory: PK.PREPARE" "$mem" "$(ratio "$mem" "$setnx")"

	fs=$(rps "$fsync_port" "$P" "$N" $(evalsha "f$P"))
	file=$(rps "$file_port" "$P" "$N" PK.PREPARE "f$P" "k:__rand_int__" v)
	printf '%-52s %8s req/s\n' "redis-server EVALSHA prepare.lua (appendfsync always)" "$fs"
	printf '%-52s %8s req/s  %s of EVALSHA fsync\n' "sidecar file: PK.PREPARE" "$file" "$(ratio "$file" "$fs")"

	c0=$(cpu "$plain_pid")
	direct=$(rps "$plain_port" "$P" "$N" $(evalsha "d$P"))
	c1=$(cpu "$plain_pid"); s1=$(cpu "$viaredis_pid")
	via=$(rps "$viaredis_port" "$P" "$N" PK.PREPARE "r$P" "k:__rand_int__" v)
	c2=$(cpu "$plain_pid"); s2=$(cpu "$viaredis_pid")
	printf '%-52s %8s req/s  redis CPU %s us/req\n' "redis-server EVALSHA prepare.lua (direct)" "$direct" \
		"$(awk -v c=$((c1 - c0)) -v n="$N" 'BEGIN {printf "%.1f", c/n}')"
	printf '%-52s %8s req/s  %s of direct; sidecar CPU %s us/req, redis CPU %s us/req\n' "sidecar redis:// PK.PREPARE" "$via" \
		"$(ratio "$via" "$direct")" \
		"$(awk -v c=$((s2 - s1)) -v n="$N" 'BEGIN {printf "%.1f", c/n}')" \
		"$(awk -v c=$((c2 - c1)) -v n="$N" 'BEGIN {printf "%.1f", c/n}')"

	if [ -n "${PK_TEST_MONGO_URI:-}" ]; then
		if [ -z "${mongo_port:-}" ]; then sidecar mongo "${PK_TEST_MONGO_URI%/}/pkbench$$"; fi
		mn=$(rps "$mongo_port" "$P" 300 PK.PREPARE "g$P" "k:__rand_int__" v)
		printf '%-52s %8s req/s  (-n 300; FerretDB, no target)\n' "sidecar mongodb: PK.PREPARE" "$mn"
	fi
done
