#!/usr/bin/env bash
# Measures the sidecar's footprint, per backend: start-up time to the first
# answered PING (median and least of STARTS start-ups), resident memory idle (2 s after start) and at 1000
# requests/s (PK.PREPARE of new keys for DURATION seconds, sent as 1000
# requests each second by redis-benchmark), CPU used at that rate, and the
# size of the binary built as the Dockerfile builds it (scripts/build-sidecar.sh).
#
# Usage: scripts/footprint.sh      (DURATION=30 BACKENDS="memory file redis" to change)
# RSS is reported whole and split into anonymous memory (the process's own)
# and file pages (the binary's code and data mapped from disk, shared with
# every process running the same file and reclaimable by the kernel). The
# file pages are split again by the binary's segments: code (.text),
# read-only data (.rodata, the type descriptors, .gopclntab: the function
# tables the runtime reads to walk stacks) and data (.data, .noptrdata, the
# pages not yet written). The kernel maps file pages 64 KiB around each page
# fault (fault-around), so a page touched once at start costs 64 KiB of RSS:
# docs/history/benchmarks-log.md, "Where the idle RSS goes", says what touches them.
# SHARED=N (default 3; 0 skips) also starts N idle memory: sidecars of the
# same binary and prints each one's PSS, where a page mapped by N processes
# counts 1/N in each: what a node pays per sidecar when its pods run the
# same image.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-30}
STARTS=${STARTS:-7}
BACKENDS=${BACKENDS:-"memory file redis"}
SHARED=${SHARED:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-footprint.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

scripts/build-sidecar.sh "$work/sidecar"
echo "binary: $(stat -c %s "$work/sidecar") bytes (scripts/build-sidecar.sh: CGO_ENABLED=0 -trimpath -ldflags='-s -w')"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mem() {
	awk '/^VmRSS/ {r=$2} /^RssAnon/ {a=$2} /^RssFile/ {f=$2} END {printf "rss=%.1fMB (anon %.1f, file %.1f", r/1024, a/1024, f/1024}' "/proc/$1/status"
	# The binary's file pages per segment: a mapping's Rss less its
	# Anonymous (the written, copied-on-write pages of its data).
	awk -v bin="$work/sidecar" '
		/^[0-9a-f]+-[0-9a-f]+ / {cur = ($6 == bin) ? $2 : ""; next}
		cur != "" && /^Rss:/ {f[cur] += $2}
		cur != "" && /^Anonymous:/ {f[cur] -= $2}
		END {printf ": code %.1f, rodata %.1f, data %.1f)", f["r-xp"]/1024, f["r--p"]/1024, f["rw-p"]/1024}' "/proc/$1/smaps"
}
cpu() { awk -v hz="$(getconf CLK_TCK)" '{print int(($14+$15)*1000000/hz)}' "/proc/$1/stat"; }

redis_port=
if [[ " $BACKENDS " == *" redis "* ]]; then
	redis_port=$(free_port)
	redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$work/redis.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do redis-cli -p "$redis_port" PING >/dev/null 2>&1 && break; sleep 0.05; done
fi

for b in $BACKENDS; do
	case $b in
	memory) url=memory: ;;
	file) url="file:$work/data-$RANDOM" ;;
	redis) url="redis://127.0.0.1:$redis_port" ;;
	esac
	port=$(free_port)
	t0=$(date +%s%N)
	"$work/sidecar" --listen "127.0.0.1:$port" --backend "$url" --log-level warn &
	pid=$!
	pids+=($pid)
	until [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ]; do :; done
	t1=$(date +%s%N)
	sleep 2
	idle=$(mem $pid)
	c0=$(cpu $pid)
	for _ in $(seq "$DURATION"); do
		s=$(date +%s%N)
		redis-benchmark -p "$port" -c 10 -n 1000 -r 100000000 -q PK.PREPARE ns "k:__rand_int__" '{"userId":"42"}' >/dev/null 2>&1
		left=$(( 1000000000 - ($(date +%s%N) - s) ))
		(( left > 0 )) && sleep "$(awk -v n=$left 'BEGIN {printf "%.3f", n/1e9}')"
	done
	c1=$(cpu $pid)
	busy=$(mem $pid)
	kill "$pid"; wait "$pid" 2>/dev/null || true
	# Start-up again, STARTS times (file: on an empty store each time),
	# timed by a poller that starts the sidecar itself and tries PING every
	# millisecond (forking redis-cli in a loop would add its own start-up).
	starts=()
	for i in $(seq "$STARTS"); do
		[ "$b" = file ] && url="file:$work/start-$i"
		starts+=($(python3 - "$work/sidecar" "$port" "$url" <<'PY'
import socket, subprocess, sys, time
bin, port, url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t0 = time.monotonic()
p = subprocess.Popen([bin, "--listen", f"127.0.0.1:{port}", "--backend", url, "--log-level", "warn"])
while True:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as c:
            c.sendall(b"*1\r\n$4\r\nPING\r\n")
            if c.recv(16).startswith(b"+PONG"):
                break
    except OSError:
        time.sleep(0.001)
print(int((time.monotonic() - t0) * 1000))
p.terminate(); p.wait()
PY
))
	done
	sorted=($(printf '%s\n' "${starts[@]}" | sort -n))
	echo "$b: start-up to first PONG median ${sorted[$((STARTS / 2))]} ms, least ${sorted[0]} ms (${starts[*]}); idle $idle; at 1000 req/s for ${DURATION}s $busy; CPU $(awk -v c=$((c1 - c0)) -v d="$DURATION" 'BEGIN {printf "%.1f%%", c/d/1e4}') of a core"
done

# PSS of SHARED idle sidecars running the same binary (memory:).
if (( SHARED > 0 )); then
	shared=()
	for i in $(seq "$SHARED"); do
		port=$(free_port)
		"$work/sidecar" --listen "127.0.0.1:$port" --backend memory: --log-level warn &
		shared+=($!)
		pids+=($!)
		until [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ]; do :; done
	done
	sleep 2
	each=()
	for p in "${shared[@]}"; do
		each+=("$(awk '/^Rss:/ {r=$2} /^Pss_Anon:/ {a=$2} /^Pss_File:/ {f=$2} END {printf "%.1fMB (anon %.1f, file %.1f; rss %.1f)", (a+f)/1024, a/1024, f/1024, r/1024}' "/proc/$p/smaps_rollup")")
	done
	echo "memory: $SHARED idle sidecars of one binary, PSS of each: ${each[*]}"
	kill "${shared[@]}"
fi
