#!/usr/bin/env bash
# Installs what `make test` needs when it is missing, so that on a fresh
# Debian machine with Go, Node.js and npm the README's two commands are all
# a newcomer types:
#   - Debian's packages: redis-server and redis-tools (the test servers,
#     redis-cli), tmux (redis-cli's help test), and the client suite's
#     python3-redis, ruby-redis, php-cli and php-redis; with apt-get when
#     run as root (one `apt-get update` first), otherwise one line naming
#     them;
#   - the modules of clients/node and clients/node/prepkey, from their
#     lock files (npm ci), when absent or older than the lock file.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
# need PACKAGE CHECK...: PACKAGE is missing when CHECK fails.
need() {
	local pkg=$1
	shift
	if ! "$@" >/dev/null 2>&1; then
		missing+=("$pkg")
	fi
}
need redis-server command -v redis-server
need redis-tools command -v redis-cli
need redis-tools command -v redis-benchmark
need tmux command -v tmux
need python3-redis /usr/bin/python3 -c 'import redis'
need ruby-redis ruby -e 'require "redis"'
need php-cli command -v php
need php-redis php -r 'exit(extension_loaded("redis") ? 0 : 1);'

if [ ${#missing[@]} -gt 0 ]; then
	# one name each, in order
	mapfile -t missing < <(printf '%s\n' "${missing[@]}" | awk '!seen[$0]++')
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		echo "== installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	else
		echo "make test needs: apt-get install ${missing[*]} (as root)" >&2
		exit 1
	fi
fi

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	echo "make test needs Node.js 20 or later with npm (for clients/node)" >&2
	exit 1
fi
# clients/node: the examples' ioredis and node-redis; clients/node/prepkey:
# the helper's TypeScript, to type-check its index.d.ts (the helper itself
# takes ioredis and node-redis from clients/node).
for d in clients/node clients/node/prepkey; do
	if [ ! -f "$d/node_modules/.package-lock.json" ] || [ "$d/package-lock.json" -nt "$d/node_modules/.package-lock.json" ]; then
		echo "== npm ci in $d"
		(cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
	fi
done
