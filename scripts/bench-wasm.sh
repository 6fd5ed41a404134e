#!/usr/bin/env bash
# Measures the WebAssembly build against the native binary, both on BACKEND
# (memory: unless set; a redis:// URL needs WASMTAGS=wasmsock, and both
# share that Redis), with redis-benchmark (PK.PREPARE, -c 50 -r 1000000) at pipeline 1 and 16:
# requests/s (median of ROUNDS, the two in alternating order), the start-up
# time (until the first PING is answered; the module with an empty and with
# a warm compilation cache) and the memory (RSS) of each process after the
# runs, and the CPU time each took per request (user + system, µs: what a
# loaded machine changes least). With BEFORE=path/to/sidecar it compares that native binary with the
# current one the same way instead (is the native build unchanged?).
#
# Usage: scripts/bench-wasm.sh        (N=100000 CLIENTS=50 ROUNDS=5 PIPELINES="1 16")
#        BEFORE=/tmp/sidecar-old scripts/bench-wasm.sh
#        WASMTAGS=wasmsock scripts/bench-wasm.sh   (the socket module, make wasm-sock)
#        WASMTAGS=wasmsock BACKEND=redis://127.0.0.1:6379 scripts/bench-wasm.sh
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-100000}
CLIENTS=${CLIENTS:-50}
ROUNDS=${ROUNDS:-5}
PIPELINES=${PIPELINES:-"1 16"}
BACKEND=${BACKEND:-memory:}
work=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-bench-wasm.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

scripts/build-sidecar.sh "$work/sidecar" # the native binary as the image builds it
GOOS=wasip1 GOARCH=wasm go build ${WASMTAGS:+-tags "$WASMTAGS"} -o "$work/prepkey.wasm" ./cmd/sidecar
go build -C tools/wasmhost -o "$work/wasmhost" .

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }
# wait_ping PORT: waits until PORT answers PING; prints the milliseconds taken.
wait_ping() {
	local t0; t0=$(now_ms)
	for _ in $(seq 3000); do
		redis-cli -p "$1" PING >/dev/null 2>&1 && { echo $(($(now_ms) - t0)); return 0; }
		sleep 0.02
	done
	echo "port $1 did not answer" >&2; return 1
}
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
rss_mib() { awk '/VmRSS/ {print int($2/1024)}' "/proc/$1/status"; }
rps() {
	redis-benchmark -p "$1" -c "$CLIENTS" -n "$N" -r 1000000 -P "$2" --csv \
		PK.PREPARE ns k:__rand_int__ v 2>/dev/null | awk -F'"' 'NR==2 {print int($4)}'
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

# a: the native binary, now; b: the module under the host, or BEFORE.
a_port=$(free_port)
t0=$(now_ms)
"$work/sidecar" --backend "$BACKEND" --listen "127.0.0.1:$a_port" --log-level warn &
pids+=($!); a_pid=$!
wait_ping "$a_port" >/dev/null
a_start=$(($(now_ms) - t0))

b_port=$(free_port)
if [ -n "${BEFORE:-}" ]; then
	b_name="before"
	t0=$(now_ms)
	"$BEFORE" --backend "$BACKEND" --listen "127.0.0.1:$b_port" --log-level warn &
	pids+=($!); b_pid=$!
	wait_ping "$b_port" >/dev/null
	b_start="$(($(now_ms) - t0)) ms"
else
	b_name="wasm"
	cache="$work/cache"
	# cold: compiles the module; then the start with the cache filled
	t0=$(now_ms)
	"$work/wasmhost" -wasm "$work/prepkey.wasm" -cache "$cache" -listen "127.0.0.1:$b_port" -- --backend "$BACKEND" --log-level warn &
	cold_pid=$!
	wait_ping "$b_port" >/dev/null
	cold=$(($(now_ms) - t0))
	kill "$cold_pid"; wait "$cold_pid" 2>/dev/null || true
	t0=$(now_ms)
	"$work/wasmhost" -wasm "$work/prepkey.wasm" -cache "$cache" -listen "127.0.0.1:$b_port" -- --backend "$BACKEND" --log-level warn &
	pids+=($!); b_pid=$!
	wait_ping "$b_port" >/dev/null
	b_start="$(($(now_ms) - t0)) ms with the compilation cache, $cold ms without"
fi
# The machine's load: the ratios mean little on a busy machine (docs/wasm.md).
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load average at the start: $(load)"
echo "start-up: native $a_start ms; $b_name $b_start"
echo "RSS at rest: native $(rss_mib "$a_pid") MiB; $b_name $(rss_mib "$b_pid") MiB"
sleep 1
idle0=$(awk '{print $14+$15}' "/proc/$b_pid/stat")
sleep 5
echo "$b_name CPU at rest: $(( ($(awk '{print $14+$15}' "/proc/$b_pid/stat") - idle0) * 100 / $(getconf CLK_TCK) / 5 ))% of a core"

for p in $PIPELINES; do
	: >"$work/a" && : >"$work/b"
	a_cpu=0 b_cpu=0
	for r in $(seq "$ROUNDS"); do
		for side in $( [ $((r % 2)) -eq 1 ] && echo a b || echo b a); do
			if [ "$side" = a ]; then port=$a_port pid=$a_pid; else port=$b_port pid=$b_pid; fi
			c0=$(cpu_ticks "$pid")
			rps "$port" "$p" >>"$work/$side"
			c=$(($(cpu_ticks "$pid") - c0))
			if [ "$side" = a ]; then a_cpu=$((a_cpu + c)); else b_cpu=$((b_cpu + c)); fi
		done
	done
	per_req() { awk -v t="$1" -v hz="$(getconf CLK_TCK)" -v n=$((N * ROUNDS)) 'BEGIN {printf "%.1f", t * 1e6 / hz / n}'; }
	echo "pipeline $p: CPU per request: native $(per_req "$a_cpu") µs; $b_name $(per_req "$b_cpu") µs"
	am=$(median <"$work/a"); bm=$(median <"$work/b")
	echo "pipeline $p: native $am req/s [$(sort -n "$work/a" | head -1)-$(sort -n "$work/a" | tail -1)]; $b_name $bm req/s [$(sort -n "$work/b" | head -1)-$(sort -n "$work/b" | tail -1)]; $b_name/native $(awk -v a="$am" -v b="$bm" 'BEGIN {printf "%.2f", b/a}')"
done
echo "RSS after the runs: native $(rss_mib "$a_pid") MiB; $b_name $(rss_mib "$b_pid") MiB"
echo "load average at the end: $(load)"
