#!/usr/bin/env bash
# Installs what `make test` needs when it is missing, so that on a fresh
# Debian machine with Go, Node.js and npm the README's two commands are all
# a newcomer types:
#   - Debian's packages: redis-server and redis-tools (the test servers,
#     redis-cli), tmux (redis-cli's help test), and the client suite's
#     python3-redis, ruby-redis, php-cli and php-redis, and for the Python
#     helper's package test python3-build, python3-venv and twine; with apt-get when
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
need python3-build /usr/bin/python3 -c 'import build'
need python3-venv /usr/bin/python3 -c 'import ensurepip'
need twine command -v twine
need ruby-redis ruby -e 'require "redis"'
need php-cli command -v php
need php-redis php -r 'exit(extension_loaded("redis") ? 0 : 1);'
need prometheus command -v promtool # promtool checks deploy/monitoring (e2e TestMonitoringPromtool)

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

# redis-py 6 for the Python helper's RESP3 run (clients/run.sh
# python-redis6-helper): Debian 12's python3-redis (4.3) speaks only RESP2.
# Debian 13's package (pure Python) is fetched by apt-get from the mirror
# this machine's Debian 12 sources name, with an apt configuration of its own
# (the machine's sources and packages are not touched), and unpacked, not
# installed, into a cache that clients/run.sh puts on PYTHONPATH.
pyredis6=${XDG_CACHE_HOME:-$HOME/.cache}/prepkey/python3-redis-trixie
if [ ! -f "$pyredis6/usr/lib/python3/dist-packages/redis/__init__.py" ]; then
	# indextargets lists only the sources whose lists are here: a machine
	# whose lists were cleaned needs an update first.
	mirrorof() { apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null | awk '$2 == "bookworm" {print $1; exit}'; }
	mirror=$(mirrorof)
	if [ -z "$mirror" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		apt-get update -qq
		mirror=$(mirrorof)
	fi
	if [ "$(id -u)" -ne 0 ] || [ -z "$mirror" ]; then
		echo "make test needs redis-py 6 for the Python helper's RESP3 tests: run scripts/deps.sh as root on Debian 12" >&2
		exit 1
	fi
	echo "== redis-py from Debian 13's python3-redis into $pyredis6"
	tmp=$(mktemp -d)
	mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$tmp/sources.list"
	apt=(-o "Dir::Etc::sourcelist=$tmp/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o APT::Sandbox::User=root)
	apt-get "${apt[@]}" update -qq
	(cd "$tmp" && apt-get "${apt[@]}" download -qq python3-redis)
	rm -rf "$pyredis6" && mkdir -p "$pyredis6"
	dpkg -x "$tmp"/python3-redis_*.deb "$pyredis6"
	rm -rf "$tmp"
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
