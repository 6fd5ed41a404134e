#!/usr/bin/env bash
# The sidecar's redis:// PK.PREPARE against twemproxy (Debian's nutcracker)
# forwarding the minimal prepare script (scripts/prepare-minimal.lua, EVALSHA)
# to the same redis-server, and that script sent to Redis directly; and
# memory: PK.PREPARE against redis-server's own SET NX (issue 33, item 6).
# The requests are bench-pair.sh's: redis-benchmark -c 50 -n N -r 1000000,
# random keys; PX 60000 (the script's TTL argument) where the store is Redis.
#
# Each round runs every target at each pipeline depth, the order reversed
# every other round; the keyspace is emptied before each run. Prints, per
# target and depth, each round's requests/s and the CPU per request of the
# process in the middle (the sidecar or nutcracker; for "direct" and "setnx"
# there is none) and of redis-server (/proc/PID/stat, µs), their medians,
# and the sidecar's ratios to twemproxy and to the script sent directly.
#
# Usage: scripts/bench-twemproxy.sh SIDECAR_BIN [ROUNDS] [DEPTHS]
#   e.g. scripts/build-sidecar.sh /tmp/sidecar && scripts/bench-twemproxy.sh /tmp/sidecar 5 "1 16"
#   N=200000 by default. Benches are not part of make test: nutcracker is
#   installed here, on demand (apt-get, as root), not by scripts/deps.sh.
set -euo pipefail
bin=$(realpath "$1"); rounds=${2:-5}; depths=${3:-"1 16"}; N=${N:-200000}
cd "$(dirname "$0")/.."
if ! command -v nutcracker >/dev/null; then
	echo "bench-twemproxy: nutcracker (twemproxy) is not installed; installing Debian's package nutcracker" >&2
	[ "$(id -u)" = 0 ] || { echo "bench-twemproxy: run as root, or apt-get install nutcracker first" >&2; exit 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nutcracker >&2
fi
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do redis-cli -p "$1" PING >/dev/null 2>&1 && return 0; sleep 0.05; done; echo "nothing answers on $1" >&2; exit 1; }

dir=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no >/dev/null 2>&1 &
rpid=$!; pids+=("$rpid"); wait_port "$rport"
sha=$(redis-cli -p "$rport" SCRIPT LOAD "$(cat scripts/prepare-minimal.lua)")

# twemproxy: one pool, the one Redis, no auto-ejection; it forwards EVALSHA
# (one key) as it is.
tport=$(free_port)
cat >"$dir/nutcracker.yml" <<EOF
pk:
  listen: 127.0.0.1:$tport
  hash: fnv1a_64
  distribution: ketama
  redis: true
  preconnect: true
  auto_eject_hosts: false
  timeout: 5000
  servers:
   - 127.0.0.1:$rport:1
EOF
nutcracker -c "$dir/nutcracker.yml" -o "$dir/nutcracker.log" -s "$(free_port)" &
tpid=$!; pids+=("$tpid"); wait_port "$tport"

sport=$(free_port)
"$bin" --listen "127.0.0.1:$sport" --backend "redis://127.0.0.1:$rport" --log-level warn >/dev/null 2>&1 &
spid=$!; pids+=("$spid"); wait_port "$sport"
mport=$(free_port) # memory:: a fresh sidecar each run (run), as the others' empty keyspace

# target -> port, process in the middle (0: none), the request.
declare -A port=([twemproxy]=$tport [sidecar]=$sport [direct]=$rport [memory]=$mport [setnx]=$rport)
declare -A mid=([twemproxy]=$tpid [sidecar]=$spid [direct]=0 [memory]=0 [setnx]=0)
declare -A cmd=(
	[twemproxy]="EVALSHA $sha 1 pk:{ns:k:__rand_int__} v 60000"
	[direct]="EVALSHA $sha 1 pk:{ns:k:__rand_int__} v 60000"
	[sidecar]="PK.PREPARE ns k:__rand_int__ v PX 60000"
	[memory]="PK.PREPARE ns k:__rand_int__ v"
	[setnx]="SET k:__rand_int__ v NX"
)
targets=(twemproxy sidecar direct memory setnx)
# Each way answers a prepare as it should before it is measured.
for t in twemproxy direct sidecar; do
	got=$(redis-cli -p "${port[$t]}" ${cmd[$t]//__rand_int__/check-$t})
	[ "$got" = 1 ] || { echo "bench-twemproxy: $t answered \"$got\" to a prepare, not 1" >&2; exit 1; }
done

run() { # TARGET DEPTH -> "rps mid-cpu-us/req redis-cpu-us/req"
	local t=$1 p=$2 m0=0 m1=0 r0 r1 rps
	redis-cli -p "$rport" FLUSHALL >/dev/null
	if [ "$t" = memory ]; then
		"$bin" --listen "127.0.0.1:$mport" --backend memory: --log-level warn >/dev/null 2>&1 &
		mid[memory]=$!; wait_port "$mport"
	fi
	[ "${mid[$t]}" = 0 ] || m0=$(cpu "${mid[$t]}")
	r0=$(cpu "$rpid")
	# shellcheck disable=SC2086 # the request's words
	rps=$(timeout 600 redis-benchmark -p "${port[$t]}" -c 50 -n "$N" -r 1000000 -P "$p" --csv ${cmd[$t]} 2>/dev/null | awk -F'"' 'NR==2 {print int($4)}')
	[ "${mid[$t]}" = 0 ] || m1=$(cpu "${mid[$t]}")
	r1=$(cpu "$rpid")
	if [ "$t" = memory ]; then kill "${mid[memory]}"; wait "${mid[memory]}" 2>/dev/null || true; fi
	if [ "$t" != setnx ] && [ "$t" != memory ]; then # every request reached Redis
		local keys; keys=$(redis-cli -p "$rport" DBSIZE)
		[ "$keys" -gt 0 ] || { echo "bench-twemproxy: $t stored nothing" >&2; exit 1; }
	fi
	awk -v rps="$rps" -v m0="$m0" -v m1="$m1" -v r0="$r0" -v r1="$r1" -v n="$N" -v hz="$hz" \
		'BEGIN {printf "%d %.2f %.2f", rps, (m1-m0)*1e6/hz/n, (r1-r0)*1e6/hz/n}'
}

declare -A rps cpum cpur
for i in $(seq "$rounds"); do
	order=("${targets[@]}")
	if (( i % 2 == 0 )); then order=(); for ((k = ${#targets[@]} - 1; k >= 0; k--)); do order+=("${targets[k]}"); done; fi
	for p in $depths; do
		for t in "${order[@]}"; do
			read -r a b c <<<"$(run "$t" "$p")"
			rps[$t,$p]="${rps[$t,$p]:-} $a"; cpum[$t,$p]="${cpum[$t,$p]:-} $b"; cpur[$t,$p]="${cpur[$t,$p]:-} $c"
		done
	done
done
med() { printf '%s\n' $1 | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
echo "N=$N ROUNDS=$rounds $(nutcracker -V 2>&1 | head -1 | awk '{print $NF}') redis $(redis-server --version | awk '{print $3}') load $(cut -d' ' -f1-3 /proc/loadavg)"
for p in $depths; do
	for t in "${targets[@]}"; do
		printf 'P%-2s %-9s requests/s median %7s [%s ] cpu-us/req mid %5s redis %5s\n' "$p" "$t" \
			"$(med "${rps[$t,$p]}")" "${rps[$t,$p]}" "$(med "${cpum[$t,$p]}")" "$(med "${cpur[$t,$p]}")"
	done
	s=$(med "${rps[sidecar,$p]}")
	echo "P$p sidecar redis:// / twemproxy $(ratio "$s" "$(med "${rps[twemproxy,$p]}")")x, / direct script $(ratio "$s" "$(med "${rps[direct,$p]}")")x; memory: / SET NX $(ratio "$(med "${rps[memory,$p]}")" "$(med "${rps[setnx,$p]}")")x; cpu-us/req sidecar / nutcracker $(ratio "$(med "${cpum[sidecar,$p]}")" "$(med "${cpum[twemproxy,$p]}")")x"
done
