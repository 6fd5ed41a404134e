#!/usr/bin/env bash
# Measures the bounds of issue 9 on a sidecar built from REV (default: the
# work tree) as the image builds it (scripts/build-sidecar.sh), with scripts/boundsload: RSS before and at its peak for the
# loads before AUTH (item 2) and for one write of a million PK.PREPAREs on
# memory:, file: and redis:// (item 3), with another client's worst latency
# and the -UNAVAILABLE count (item 4). Figures go in docs/benchmarks.md.
#
#   scripts/bounds.sh            # the work tree
#   scripts/bounds.sh d8dcfc5    # a commit, to compare (its source, this load)
#
# Needs redis-server. N=1000000 to change the pipeline's depth.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-1000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-bounds.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${1:-}" ]; then
	mkdir "$work/src"
	git archive "$1" | tar -x -C "$work/src"
fi
# As the image builds it, the commit's source with today's flags.
scripts/build-sidecar.sh "$work/sidecar" ${1:+"$work/src"}
go build -o "$work/boundsload" ./scripts/boundsload

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do redis-cli -p "$1" ${2:+-a "$2"} PING >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "port $1 did not answer" >&2; return 1; }

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --dir "$work" --save '' --appendonly no --daemonize no >"$work/redis.log" 2>&1 &
pids+=($!)
wait_port "$rport"

# run NAME BACKEND LOAD [FLAGS...]
run() {
	local name=$1 backend=$2 load=$3; shift 3
	local port; port=$(free_port)
	"$work/sidecar" --listen "127.0.0.1:$port" --backend "$backend" --log-level error "$@" >"$work/$name.log" 2>&1 &
	local pid=$!
	pids+=($pid)
	sleep 0.5
	for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
	printf '%-8s ' "$name"
	"$work/boundsload" -addr "127.0.0.1:$port" -pid "$pid" -n "$N" "$load" || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

echo "sidecar: ${1:-work tree}; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
run preauth memory: preauth --requirepass pw
run memory memory: deep
run file "file:$work/data" deep
run redis "redis://127.0.0.1:$rport" deep --redis-key-prefix "bounds:"
