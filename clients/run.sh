#!/usr/bin/env bash
# Runs every client example in clients/ (and client/examples/go-redis, the Go
# one) against a fresh sidecar (the
# embedded store in a temporary directory, a password set), then the tests
# of the typed helpers (clients/python/prepkey, clients/node/prepkey; the Go
# helper, client/, runs in `go test`) against a sidecar on memory: and one on
# a real Redis, each with a sidecar whose backend is down beside it; one
# after the other, and fails if any of them does. `make test-clients` runs
# it (and `make test`, after the Go tests); `make deps` installs what it
# needs.
#
#   clients/run.sh            # all of them
#   clients/run.sh python     # some: python go ioredis node-redis ruby php
#                             #   python-helper python-redis6-helper python-package-helper
#                             #   node-helper node-helper-types
#                             #   node-package (npm pack, install the tarball, its tests)
set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-clients.XXXXXX")
pids=()
stop() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$dir"
}
trap stop EXIT

go build -o "$dir/sidecar" ./cmd/sidecar
go build -C client -o "$dir/go-example" ./examples/go-redis
export PREPKEY_PASSWORD="pw-$RANDOM$RANDOM"

# serve NAME ARGS...: starts a sidecar with ARGS on a free port and sets
# addr to where it serves (host:port).
serve() {
	local name=$1
	shift
	"$dir/sidecar" --listen 127.0.0.1:0 --requirepass "$PREPKEY_PASSWORD" --log-format text "$@" 2>"$dir/$name.log" &
	local pid=$!
	pids+=("$pid")
	addr=
	for _ in $(seq 100); do
		addr=$(sed -n 's/.*msg=serving listen=\([^ ]*\).*/\1/p' "$dir/$name.log")
		[ -n "$addr" ] && return 0
		kill -0 "$pid" 2>/dev/null || { cat "$dir/$name.log" >&2; exit 1; }
		sleep 0.1
	done
	echo "the sidecar ($name) did not start" >&2
	cat "$dir/$name.log" >&2
	exit 1
}

# freeport prints a TCP port nobody listens on now.
freeport() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(python go ioredis node-redis ruby php python-helper python-redis6-helper python-package-helper node-helper node-helper-types node-package)

serve example --backend "file:$dir/data"
example_addr=$addr

# The helpers' suites need a real Redis behind one of their sidecars, and
# a sidecar whose Redis is not there (every PK command: -UNAVAILABLE).
helpers=false
for name in "${names[@]}"; do [[ $name == *-helper || $name == node-package ]] && helpers=true; done
if $helpers; then
	redis_port=$(freeport)
	redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$dir" --logfile "$dir/redis.log" --daemonize no &
	pids+=("$!")
	for _ in $(seq 100); do
		redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	redis-cli -p "$redis_port" ping >/dev/null || { echo "redis-server did not start" >&2; cat "$dir/redis.log" >&2; exit 1; }
	serve helper-memory --backend memory:
	memory_addr=$addr
	serve helper-redis --backend "redis://127.0.0.1:$redis_port"
	redis_addr=$addr
	serve helper-down --backend "redis://127.0.0.1:$(freeport)"
	export PREPKEY_UNAVAILABLE_PORT=${addr##*:}
fi

declare -A suite=(
	[python]="/usr/bin/python3 clients/python/example.py"
	[go]="$dir/go-example"
	[ioredis]="node clients/node/ioredis.js"
	[node-redis]="node clients/node/node-redis.js"
	[ruby]="ruby clients/ruby/example.rb"
	[php]="php clients/php/example.php"
	[python-helper]="/usr/bin/python3 -m unittest discover -s clients/python/prepkey/tests -t clients/python/prepkey"
	# The same with redis-py 6 (Debian 13's, unpacked by scripts/deps.sh):
	# RESP2 and RESP3.
	[python-redis6-helper]="env PYTHONPATH=${XDG_CACHE_HOME:-$HOME/.cache}/prepkey/python3-redis-trixie/usr/lib/python3/dist-packages /usr/bin/python3 -m unittest discover -s clients/python/prepkey/tests -t clients/python/prepkey"
	# The built sdist and wheel: metadata checked, the wheel installed in a
	# fresh venv, the README's examples and the tests run against it.
	[python-package-helper]="clients/python/prepkey/test-package.sh"
	[node-helper]="node --test --test-reporter=spec clients/node/prepkey/test/errors.test.js clients/node/prepkey/test/operations.test.js clients/node/prepkey/test/using-prepare.test.js clients/node/prepkey/test/resilience.test.js clients/node/prepkey/test/key.test.js clients/node/prepkey/test/jackson.test.js clients/node/prepkey/test/readme.test.js"
	# tsc over index.d.ts and a usage file: no sidecar, so once (50-80 s).
	[node-helper-types]="node --test --test-reporter=spec clients/node/prepkey/test/types.test.js"
	# npm pack, the tarball's files, the tarball installed in a fresh
	# project, the helper's tests and README examples against it; once, on
	# memory:.
	[node-package]="clients/node/pack-test.sh"
)
ok=0 bad=0
# run NAME BACKEND ADDR: runs one suite against the sidecar at ADDR.
run() {
	local name=$1 backend=$2
	export PREPKEY_HOST=${3%:*} PREPKEY_PORT=${3##*:} PREPKEY_BACKEND=$backend
	echo "== $name ($backend): ${suite[$name]}"
	local start=$SECONDS
	if timeout 180 ${suite[$name]}; then
		echo "   ($((SECONDS - start))s)"
		ok=$((ok + 1))
	else
		echo "FAIL $name ($backend)"
		bad=$((bad + 1))
	fi
}
for name in "${names[@]}"; do
	if [[ $name == *-helper ]]; then
		run "$name" memory: "$memory_addr"
		run "$name" redis: "$redis_addr"
	elif [[ $name == node-package ]]; then
		run "$name" memory: "$memory_addr"
	else
		run "$name" file: "$example_addr"
	fi
done
echo "clients: $ok passed, $bad failed"
[ "$bad" -eq 0 ]
