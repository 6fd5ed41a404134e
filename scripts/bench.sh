#!/usr/bin/env bash
# Measures the sidecar side by side with the Redis it is compared to, in one
# run, with redis-benchmark (-c 50 -n 200000 -r 1000000) at pipeline 1 and 16:
#
#   memory:   sidecar PK.PREPARE PX 60000 vs  SET k v NX PX 60000 on redis-server (no persistence)
#   file:     sidecar PK.PREPARE    vs  EVALSHA of the sidecar's script (block.lua, one PK.PREPARE)
#             on redis-server (appendfsync always)
#   redis://  sidecar PK.PREPARE … PX 60000  vs  EVALSHA sent directly to the same Redis of
#             (a) the sidecar's own script, block.lua with one PK.PREPARE, and (b) the minimal
#             hand-written prepare script, scripts/prepare-minimal.lua (TIME, HGET, compare,
#             HSET, PEXPIREAT: what an application writes itself); plus CPU time per request
#             of the sidecar and of redis-server
#   latency:  one client (-c 1, pipeline 1): p50 and p99 of memory: PK.PREPARE vs SET NX,
#             file: PK.PREPARE vs EVALSHA (appendfsync always), redis:// PK.GET vs GET and
#             redis:// PK.PREPARE vs the minimal script (LAT_N requests a run; LAT_N=0 skips;
#             the GETs read keys never written, on both sides)
#   mongodb:  sidecar PK.PREPARE on FerretDB (a figure only; small -n), when PK_TEST_MONGO_URI is set
#
#   scripts/bench.sh multi: PK.MPREPARE of 2 keys against 2 PK.PREPAREs pipelined (one
#             sign-up either way), and a full PK.SCAN of 100k records (time, sidecar RSS),
#             on memory:, file: and redis://
#
#   scripts/bench.sh wait: the cost of ?wait=1 (docs/redis.md, Replication):
#             sidecar redis://master PK.PREPARE  vs  the same with ?wait=1, against a master with
#             one replica, plus EVALSHA sent directly to that master
#
# Usage: scripts/bench.sh [wait|multi]   (N=200000 CLIENTS=50 PIPELINES="1 16" ROUNDS=3 LAT_N=20000 to change;
#                                         ONLY="file" runs only the rows of those stores: mem file redis)
# Needs redis-server, redis-cli and redis-benchmark (apt-get install redis-server redis-tools).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-200000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
ONLY=${ONLY:-"mem file redis"}
RANGE=1000000
work=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-bench.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

scripts/build-sidecar.sh "$work/sidecar" # as the image builds it

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

# sidecar NAME BACKEND [FLAGS...]: starts the sidecar; sets ${NAME}_port and ${NAME}_pid.
sidecar() {
	local name=$1 backend=$2; shift 2
	local port; port=$(free_port)
	"$work/sidecar" --listen "127.0.0.1:$port" --backend "$backend" --log-level warn "$@" >"$work/$name.log" 2>&1 &
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

if [ "${1:-}" = wait ]; then
	ROUNDS=${ROUNDS:-3}
	redis master --appendonly no
	redis replica --appendonly no --replicaof 127.0.0.1 "$master_port"
	for _ in $(seq 100); do
		redis-cli -p "$replica_port" info replication | grep -q '^master_link_status:up' && break
		sleep 0.1
	done
	sidecar nowait "redis://127.0.0.1:$master_port"
	sidecar wait1 "redis://127.0.0.1:$master_port?wait=1"
	sha=$(redis-cli -p "$master_port" SCRIPT LOAD "$(cat backend/redis/lua/block.lua)")
	declare -A got
	add() { got[$1]="${got[$1]:-} $2"; }
	median() { tr ' ' '\n' <<<"${got[$1]}" | grep . | sort -n | awk '{v[NR]=$1} END {print (NR ? v[int((NR+1)/2)] : 0)}'; }
	spread() { tr ' ' '\n' <<<"${got[$1]}" | grep . | sort -n | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s-%s", lo, hi}'; }
	run_direct() { add "direct$P" "$(rps "$master_port" "$P" "$N" EVALSHA "$sha" 1 "pk:{d$P-$r:k:__rand_int__}" 86400000 p v n 0)"; }
	run_nowait() { add "nowait$P" "$(rps "$nowait_port" "$P" "$N" PK.PREPARE "n$P-$r" "k:__rand_int__" v)"; }
	run_wait1() { add "wait1$P" "$(rps "$wait1_port" "$P" "$N" PK.PREPARE "w$P-$r" "k:__rand_int__" v)"; }
	echo "# prepkey bench wait: redis-benchmark -c $CLIENTS -n $N -r $RANGE, median of $ROUNDS rounds, $(nproc) cores, master + 1 replica, redis $(redis-server --version | awk '{print $3}' | cut -d= -f2)"
	for P in $PIPELINES; do
		for r in $(seq "$ROUNDS"); do
			# the two sidecars in both orders, alternately
			if [ $((r % 2)) = 1 ]; then run_nowait; run_wait1; else run_wait1; run_nowait; fi
			run_direct
		done
		echo
		echo "## pipeline $P"
		printf '%-52s %8s req/s (%s)\n' "redis-server EVALSHA block.lua, 1 op (direct, master)" "$(median "direct$P")" "$(spread "direct$P")"
		printf '%-52s %8s req/s (%s)\n' "sidecar redis:// PK.PREPARE" "$(median "nowait$P")" "$(spread "nowait$P")"
		printf '%-52s %8s req/s (%s)  %s of no wait\n' "sidecar redis://?wait=1 PK.PREPARE" "$(median "wait1$P")" "$(spread "wait1$P")" \
			"$(ratio "$(median "wait1$P")" "$(median "nowait$P")")"
	done
	exit 0
fi

if [ "${1:-}" = multi ]; then
	ROUNDS=${ROUNDS:-3}
	SCAN_RECORDS=${SCAN_RECORDS:-100000}
	redis plain --appendonly no
	sidecar mem memory:
	sidecar file "file:$work/data"
	sidecar viaredis "redis://127.0.0.1:$plain_port"
	declare -A got
	add() { got[$1]="${got[$1]:-} $2"; }
	median() { tr ' ' '\n' <<<"${got[$1]}" | grep . | sort -n | awk '{v[NR]=$1} END {print (NR ? v[int((NR+1)/2)] : 0)}'; }
	spread() { tr ' ' '\n' <<<"${got[$1]}" | grep . | sort -n | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s-%s", lo, hi}'; }
	half() { awk -v a="$1" 'BEGIN {print int(a/2)}'; }
	echo "# prepkey bench multi: redis-benchmark -c $CLIENTS -n $N -r $RANGE, median of $ROUNDS rounds, $(nproc) cores, redis $(redis-server --version | awk '{print $3}' | cut -d= -f2)"
	echo
	# Scans first, on fresh sidecars and an empty Redis: the RSS is the
	# scan's, and a Redis SCAN walks only these records.
	echo "## full PK.SCAN of $SCAN_RECORDS records (one connection, cursor after cursor)"
	for b in mem file viaredis; do
		port_var="${b}_port"; pid_var="${b}_pid"; port=${!port_var}; pid=${!pid_var}
		seq 0 $((SCAN_RECORDS - 1)) | awk '{printf "*4\r\n$10\r\nPK.PREPARE\r\n$4\r\nscan\r\n$%d\r\nkey:%d\r\n$5\r\nvalue\r\n", length("key:" $1), $1}' |
			redis-cli -p "$port" --pipe >/dev/null
		for count in 10 1000; do
			rss0=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
			( peak=0; while kill -0 "$pid" 2>/dev/null && [ ! -e "$work/scan.done" ]; do
				v=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status"); [ "$v" -gt "$peak" ] && peak=$v; echo "$peak" >"$work/scan.peak"; sleep 0.02
			done ) &
			sampler=$!
			out=$(python3 scripts/scanall.py "$port" scan "$count")
			touch "$work/scan.done"; wait "$sampler"; rm -f "$work/scan.done"
			printf '%-10s COUNT %-5s %s; sidecar RSS %d MiB before, peak %d MiB\n' "$b" "$count" "$out" \
				$((rss0 / 1024)) $(($(cat "$work/scan.peak") / 1024))
		done
	done
	echo
	echo "## one sign-up = 2 keys (namespaces u and e): sign-ups per second"
	for b in mem file viaredis; do
		port_var="${b}_port"; port=${!port_var}
		for r in $(seq "$ROUNDS"); do
			# both orders, alternately
			m() { add "m$b" "$(rps "$port" 1 "$N" PK.MPREPARE 2 "mu$r" "k:__rand_int__" v "me$r" "k:__rand_int__" v)"; }
			p() { add "p$b" "$(half "$(rps "$port" 2 "$((2 * N))" PK.PREPARE "pu$r" "k:__rand_int__" v)")"; }
			if [ $((r % 2)) = 1 ]; then m; p; else p; m; fi
		done
		printf '%-44s %8s /s (%s)\n' "$b: PK.MPREPARE 2 keys" "$(median "m$b")" "$(spread "m$b")"
		printf '%-44s %8s /s (%s)  MPREPARE is %s of it\n' "$b: 2 PK.PREPAREs pipelined (-P 2, /2)" "$(median "p$b")" "$(spread "p$b")" \
			"$(ratio "$(median "m$b")" "$(median "p$b")")"
	done
	exit 0
fi

redis plain --appendonly no
redis fsync --appendonly yes --appendfsync always
sidecar mem memory:
sidecar file "file:$work/data"
sidecar viaredis "redis://127.0.0.1:$plain_port"

sha=$(redis-cli -p "$plain_port" SCRIPT LOAD "$(cat backend/redis/lua/block.lua)")
redis-cli -p "$fsync_port" SCRIPT LOAD "$(cat backend/redis/lua/block.lua)" >/dev/null
minsha=$(redis-cli -p "$plain_port" SCRIPT LOAD "$(cat scripts/prepare-minimal.lua)")
redis-cli -p "$fsync_port" SCRIPT LOAD "$(cat scripts/prepare-minimal.lua)" >/dev/null
# The sidecar's Redis key for (ns, key) is pk:{ns:key}; block.lua's
# arguments are the retention (24h), then the op: p value mode ms.
evalsha() { echo EVALSHA "$sha" 1 "pk:{$1:k:__rand_int__}" 86400000 p v "${2:-n}" "${3:-0}"; }
evalmin() { echo EVALSHA "$minsha" 1 "pk:{$1:k:__rand_int__}" v 60000; }

# Every figure is the median of ROUNDS runs; in each round the sidecar and what
# it is compared to run back to back, so machine noise (large on shared 2-core
# machines) hits both alike.
ROUNDS=${ROUNDS:-3}
declare -A got
add() { got[$1]="${got[$1]:-} $2"; }
median() { tr ' ' '\n' <<<"${got[$1]}" | grep . | sort -n | awk '{v[NR]=$1} END {print (NR ? v[int((NR+1)/2)] : 0)}'; }
spread() { tr ' ' '\n' <<<"${got[$1]}" | grep . | sort -n | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s-%s", lo, hi}'; }
us() { awk -v c="$1" -v n="$N" 'BEGIN {printf "%.1f", c/n}'; }

# fresh empties the plain Redis before a redis:// row's run, so that each run
# grows its keyspace (and rehashes) alike: carried over, the rehashes fall in
# some rows' runs only (docs/benchmarks.md, bench-pair.sh).
fresh() { redis-cli -p "$plain_port" FLUSHALL >/dev/null; }

# One measured run each; P and r are the loop's pipeline and round.
# timed NAME PID PORT ARGS...: one run's requests/s as NAME$P and the CPU per
# request of process PID meanwhile as NAME${P}cpu.
timed() {
	local name=$1 pid=$2 port=$3; shift 3
	local c0 c1; c0=$(cpu "$pid")
	add "$name$P" "$(rps "$port" "$P" "$N" "$@")"
	c1=$(cpu "$pid")
	add "${name}${P}cpu" "$(us $((c1 - c0)))"
}
# memory: and SET NX both with PX 60000: an expiry is work on both sides.
run_setnx() { timed setnx "$plain_pid" "$plain_port" SET "s$P$r:k:__rand_int__" v NX PX 60000; }
run_mem() { timed mem "$mem_pid" "$mem_port" PK.PREPARE "m$P-$r" "k:__rand_int__" v PX 60000; }
run_fsync() { timed fsync "$fsync_pid" "$fsync_port" $(evalsha "f$P-$r"); }
run_file() { timed file "$file_pid" "$file_port" PK.PREPARE "f$P-$r" "k:__rand_int__" v; }
run_direct() { fresh; timed direct "$plain_pid" "$plain_port" $(evalsha "d$P-$r" a 60000); }
run_minimal() { fresh; timed minimal "$plain_pid" "$plain_port" $(evalmin "n$P-$r"); }
run_via() {
	fresh
	local c0 c1 s0 s1; c0=$(cpu "$plain_pid"); s0=$(cpu "$viaredis_pid")
	add "via$P" "$(rps "$viaredis_port" "$P" "$N" PK.PREPARE "r$P-$r" "k:__rand_int__" v PX 60000)"
	c1=$(cpu "$plain_pid"); s1=$(cpu "$viaredis_pid")
	add "sidecarcpu$P" "$(us $((s1 - s0)))"
	add "viarediscpu$P" "$(us $((c1 - c0)))"
}
# pair A B runs a sidecar and what it is compared to, in both orders
# alternately, so that the order within a round favours neither: the same
# sidecar binary measured twice in a row after direct EVALSHA gave medians of
# 0.81x, then 0.75x, of direct over 7 rounds.
pair() { if [ "$first" = 1 ]; then "$1"; "$2"; else "$2"; "$1"; fi; }
# trio A B C: the same with three, A B C and C B A alternately.
trio() { if [ "$first" = 1 ]; then "$1"; "$2"; "$3"; else "$3"; "$2"; "$1"; fi; }

echo "# prepkey bench: redis-benchmark -c $CLIENTS -n $N -r $RANGE, median of $ROUNDS rounds, $(nproc) cores, redis $(redis-server --version | awk '{print $3}' | cut -d= -f2)"
for P in $PIPELINES; do
	for r in $(seq "$ROUNDS"); do
		# Each pair runs in both orders, alternately (see pair).
		first=$((r % 2))
		if [[ " $ONLY " == *" mem "* ]]; then pair run_setnx run_mem; fi
		if [[ " $ONLY " == *" file "* ]]; then pair run_fsync run_file; fi
		if [[ " $ONLY " == *" redis "* ]]; then trio run_direct run_via run_minimal; fi
	done
	echo
	echo "## pipeline $P"
	row() { printf '%-52s %8s req/s (%s)  %s\n' "$1" "$(median "$2")" "$(spread "$2")" "${3:-}"; }
	if [[ " $ONLY " == *" mem "* ]]; then
		row "redis-server SET NX PX (no persistence)" "setnx$P" "redis CPU $(median "setnx${P}cpu") us/req"
		row "sidecar memory: PK.PREPARE PX" "mem$P" "$(ratio "$(median "mem$P")" "$(median "setnx$P")") of SET NX; sidecar CPU $(median "mem${P}cpu") us/req"
	fi
	if [[ " $ONLY " == *" file "* ]]; then
		row "redis-server EVALSHA block.lua 1 op (appendfsync always)" "fsync$P" "redis CPU $(median "fsync${P}cpu") us/req"
		row "sidecar file: PK.PREPARE" "file$P" "$(ratio "$(median "file$P")" "$(median "fsync$P")") of EVALSHA fsync; sidecar CPU $(median "file${P}cpu") us/req"
	fi
	if [[ " $ONLY " == *" redis "* ]]; then
		row "redis-server EVALSHA block.lua 1 op PX (direct)" "direct$P" "redis CPU $(median "direct${P}cpu") us/req"
		row "redis-server EVALSHA prepare-minimal.lua (direct)" "minimal$P" "redis CPU $(median "minimal${P}cpu") us/req"
		row "sidecar redis:// PK.PREPARE PX" "via$P" "$(ratio "$(median "via$P")" "$(median "minimal$P")") of minimal, $(ratio "$(median "via$P")" "$(median "direct$P")") of block.lua; sidecar CPU $(median "sidecarcpu$P") us/req, redis CPU $(median "viarediscpu$P") us/req"
	fi
	if [ -n "${PK_TEST_MONGO_URI:-}" ]; then
		# FerretDB serialises writes on SQLite: 8 clients, a long timeout.
		if [ -z "${mongo_port:-}" ]; then sidecar mongo "${PK_TEST_MONGO_URI%/}/pkbench$$" --backend-timeout 10s; fi
		mn=$(CLIENTS=8 rps "$mongo_port" "$P" 300 PK.PREPARE "g$P" "k:__rand_int__" v || echo failed)
		printf '%-52s %8s req/s  (-c 8 -n 300, one run; FerretDB, no target)\n' "sidecar mongodb: PK.PREPARE" "$mn"
	fi
done

# Latency at one client: p50 and p99 (redis-benchmark -c 1 --csv), each
# pair in both orders alternately, median of the rounds' percentiles.
LAT_N=${LAT_N:-20000}
[ "$LAT_N" -gt 0 ] || exit 0
# lat NAME PORT ARGS...: one -c 1 run; adds NAME.p50 and NAME.p99 in us.
lat() {
	local name=$1 port=$2; shift 2
	local line; line=$(redis-benchmark -p "$port" -c 1 -n "$LAT_N" -r "$RANGE" -P 1 --csv "$@" 2>/dev/null | awk 'NR==2')
	add "$name.p50" "$(awk -F'"' '{printf "%d", $10 * 1000}' <<<"$line")"
	add "$name.p99" "$(awk -F'"' '{printf "%d", $14 * 1000}' <<<"$line")"
}
lat_setnx() { lat setnx "$plain_port" SET "ls$r:k:__rand_int__" v NX PX 60000; }
lat_mem() { lat mem "$mem_port" PK.PREPARE "lm$r" "k:__rand_int__" v PX 60000; }
lat_fsync() { lat fsync "$fsync_port" $(evalsha "lf$r"); }
lat_file() { lat file "$file_port" PK.PREPARE "lf$r" "k:__rand_int__" v; }
lat_get() { lat get "$plain_port" GET "pk:{lg:k:__rand_int__}"; }
lat_pkget() { lat pkget "$viaredis_port" PK.GET lg "k:__rand_int__"; }
lat_min() { lat min "$plain_port" $(evalmin "ln$r"); }
lat_via() { lat via "$viaredis_port" PK.PREPARE "lr$r" "k:__rand_int__" v PX 60000; }
for r in $(seq "$ROUNDS"); do
	first=$((r % 2))
	if [[ " $ONLY " == *" mem "* ]]; then pair lat_setnx lat_mem; fi
	if [[ " $ONLY " == *" file "* ]]; then pair lat_fsync lat_file; fi
	if [[ " $ONLY " == *" redis "* ]]; then pair lat_get lat_pkget; pair lat_min lat_via; fi
done
echo
echo "## latency, 1 client (-c 1 -n $LAT_N, pipeline 1): p50 / p99 in us"
lrow() {
	local p50 p99; p50=$(median "$2.p50"); p99=$(median "$2.p99")
	local extra=""
	if [ -n "${3:-}" ]; then
		extra="adds $((p50 - $(median "$3.p50"))) us at p50, $((p99 - $(median "$3.p99"))) at p99"
	fi
	printf '%-52s %6s / %-6s %s\n' "$1" "$p50" "$p99" "$extra"
}
if [[ " $ONLY " == *" mem "* ]]; then
	lrow "redis-server SET NX PX" setnx
	lrow "sidecar memory: PK.PREPARE PX" mem setnx
fi
if [[ " $ONLY " == *" file "* ]]; then
	lrow "redis-server EVALSHA block.lua (appendfsync always)" fsync
	lrow "sidecar file: PK.PREPARE" file fsync
fi
if [[ " $ONLY " == *" redis "* ]]; then
	lrow "redis-server GET" get
	lrow "sidecar redis:// PK.GET" pkget get
	lrow "redis-server EVALSHA prepare-minimal.lua" min
	lrow "sidecar redis:// PK.PREPARE PX" via min
fi
