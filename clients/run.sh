#!/usr/bin/env bash
# Runs every client example in clients/ against a fresh sidecar (the
# embedded store in a temporary directory, a password set), one after the
# other, and fails if any of them does. `make test-clients` runs it (and
# `make test`, after the Go tests); `make deps` installs what it needs.
#
#   clients/run.sh            # all of them
#   clients/run.sh python     # some: python go ioredis node-redis ruby php
set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-clients.XXXXXX")
pid=
stop() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$dir"
}
trap stop EXIT

go build -o "$dir/sidecar" ./cmd/sidecar
go build -o "$dir/go-example" ./clients/go
export PREPKEY_PASSWORD="pw-$RANDOM$RANDOM"
"$dir/sidecar" --listen 127.0.0.1:0 --backend "file:$dir/data" --requirepass "$PREPKEY_PASSWORD" \
	--log-format text 2>"$dir/sidecar.log" &
pid=$!
for _ in $(seq 100); do
	addr=$(sed -n 's/.*msg=serving listen=\([^ ]*\).*/\1/p' "$dir/sidecar.log")
	[ -n "$addr" ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$dir/sidecar.log" >&2; exit 1; }
	sleep 0.1
done
[ -n "$addr" ] || { echo "the sidecar did not start" >&2; cat "$dir/sidecar.log" >&2; exit 1; }
export PREPKEY_HOST=${addr%:*} PREPKEY_PORT=${addr##*:}

declare -A suite=(
	[python]="/usr/bin/python3 clients/python/example.py"
	[go]="$dir/go-example"
	[ioredis]="node clients/node/ioredis.js"
	[node-redis]="node clients/node/node-redis.js"
	[ruby]="ruby clients/ruby/example.rb"
	[php]="php clients/php/example.php"
)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(python go ioredis node-redis ruby php)
ok=0 bad=0
for name in "${names[@]}"; do
	echo "== $name: ${suite[$name]}"
	start=$SECONDS
	if timeout 120 ${suite[$name]}; then
		echo "   ($((SECONDS - start))s)"
		ok=$((ok + 1))
	else
		echo "FAIL $name"
		bad=$((bad + 1))
	fi
done
echo "clients: $ok passed, $bad failed"
[ "$bad" -eq 0 ]
