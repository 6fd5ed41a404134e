#!/usr/bin/env bash
# Starts or stops FerretDB (MongoDB wire protocol on SQLite) for the MongoDB
# backend's tests, since no MongoDB server can be installed on the test
# machines.
#
#   eval "$(scripts/ferretdb.sh up "$dir")"   # prints export PK_TEST_MONGO_URI=...
#   scripts/ferretdb.sh down "$dir"
#
# The runner in tools/ferretdb (its own Go module) is built once and cached
# under $PK_CACHE_DIR (default ${XDG_CACHE_HOME:-~/.cache}/prepkey), keyed by
# a hash of its sources and the Go version: a cold build takes minutes.
# When MONGO_URI is set the tests use that server, so nothing is started.
set -euo pipefail
. "$(dirname "$0")/pidfile.sh"

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1
dir=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$root/tools/ferretdb

build() {
	local cache key bin
	cache=${PK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/prepkey}
	key=$( (cat "$src/main.go" "$src/go.mod" "$src/go.sum"; go version) | sha256sum | cut -c1-16)
	bin=$cache/ferretdb-$key
	if [[ ! -x $bin ]]; then
		mkdir -p "$cache"
		echo "ferretdb.sh: building the FerretDB runner (cold: a few minutes)" >&2
		(cd "$src" && go build -o "$bin.tmp.$$" .) >&2
		mv "$bin.tmp.$$" "$bin"
	fi
	echo "$bin"
}

up() {
	if [[ -n ${MONGO_URI:-} ]]; then
		echo "ferretdb.sh: MONGO_URI is set; the tests use it, FerretDB not started" >&2
		return
	fi
	mkdir -p "$dir"
	local bin uri=""
	bin=$(build)
	rm -f "$dir/ferretdb.uri"
	"$bin" -listen 127.0.0.1:0 -dir "$dir/ferretdb-data" >"$dir/ferretdb.uri" 2>"$dir/ferretdb.log" &
	echo $! >"$dir/ferretdb.pid"
	# The runner prints its URI once the listener is bound.
	for _ in $(seq 300); do
		uri=$(head -n1 "$dir/ferretdb.uri" 2>/dev/null || true)
		[[ -n $uri ]] && break
		if ! kill -0 "$(cat "$dir/ferretdb.pid")" 2>/dev/null; then
			echo "ferretdb.sh: FerretDB exited at start:" >&2
			cat "$dir/ferretdb.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	if [[ -z $uri ]]; then
		echo "ferretdb.sh: FerretDB printed no URI within 30s; log:" >&2
		cat "$dir/ferretdb.log" >&2
		down
		exit 1
	fi
	local hostport=${uri#mongodb://}
	hostport=${hostport%%/*}
	if ! (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}") 2>/dev/null; then
		echo "ferretdb.sh: FerretDB does not accept connections on $hostport" >&2
		down
		exit 1
	fi
	echo "export PK_TEST_MONGO_URI='$uri'"
}

down() {
	stop_pidfile "$dir/ferretdb.pid"
	rm -rf "$dir/ferretdb.uri" "$dir/ferretdb-data"
}

case $cmd in
up) up ;;
down) down ;;
*) usage ;;
esac
