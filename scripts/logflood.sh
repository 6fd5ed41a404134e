#!/usr/bin/env bash
# Measures what a client that opens connections at will writes to the
# sidecar's log (issue 23, N5): for SECS seconds (default 5), connections
# past --max-clients (two held open), then HTTP POSTs to the RESP port; the
# bytes and lines of stderr and the events the client made. The sidecar is
# built from REV (default: the work tree) as the image builds it
# (scripts/build-sidecar.sh), and logs as it does by default (text, info).
# Figures go in docs/benchmarks.md.
#
#   scripts/logflood.sh            # the work tree
#   scripts/logflood.sh 24433f7    # a commit, to compare (its source, this load)
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${SECS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-logflood.XXXXXX")
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
scripts/build-sidecar.sh "$work/sidecar" ${1:+"$work/src"}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# load KIND PORT: KIND is refuse (hold two connections, open more) or post.
load() {
	python3 - "$1" "$2" "$SECS" <<'EOF'
import socket, sys, time
kind, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
held = []
if kind == "refuse":
    for _ in range(2):
        s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"PING\r\n")
        assert s.recv(64) == b"+PONG\r\n"; held.append(s)
n, end = 0, time.time() + secs
while time.time() < end:
    s = socket.create_connection(("127.0.0.1", port))
    if kind == "post":
        s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 6\r\n\r\nPING\r\n")
    while s.recv(4096):
        pass
    s.close(); n += 1
print(n)
EOF
}

# run KIND FLAGS...
run() {
	local kind=$1; shift
	local port; port=$(free_port)
	"$work/sidecar" --listen "127.0.0.1:$port" --backend memory: --log-format text "$@" 2>"$work/$kind.log" &
	local pid=$!
	pids+=($pid)
	for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
	local before; before=$(wc -c <"$work/$kind.log")
	local events; events=$(load "$kind" "$port")
	sleep 1.5 # the last second's summary
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	local bytes lines; bytes=$(($(wc -c <"$work/$kind.log") - before)); lines=$(tail -c +$((before + 1)) "$work/$kind.log" | wc -l)
	printf '%-7s %7d connections in %ss: log %9d bytes, %6d lines\n' "$kind" "$events" "$SECS" "$bytes" "$lines"
}

echo "sidecar: ${1:-work tree}; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
run refuse --max-clients 2
run post
