#!/usr/bin/env bash
# Starts or stops the MongoDB engine of the tests: FerretDB v2 on PostgreSQL
# with Microsoft's DocumentDB extension. Unlike FerretDB v1 on SQLite
# (scripts/ferretdb.sh), it updates one document atomically, stores
# Decimal128 and builds TTL and hashed indexes, so the MongoDB backend's
# race, linearizability and Wow tests run on it unskipped.
#
#   eval "$(scripts/mongo-engine.sh up "$dir")"  # prints export PK_TEST_MONGO_URI=...
#   scripts/mongo-engine.sh down "$dir"
#
# Where it comes from: Debian publishes postgresql-N-documentdb only in its
# development suite (sid), built for a newer glibc than Debian 12's, so it
# cannot run on this machine's libraries. The script downloads the package
# and its dependencies (~140 MB) with apt-get from the mirror this machine's
# sources name, through an apt configuration of its own (nothing of the
# machine's apt state or packages changes), unpacks them with dpkg -x (no
# maintainer scripts run) into a directory, and runs PostgreSQL there with
# chroot as user nobody. That needs root (as scripts/deps.sh does); the
# tree (~540 MB) is cached under $PK_CACHE_DIR (default
# ${XDG_CACHE_HOME:-~/.cache}/prepkey), and so is the FerretDB v2 runner
# (tools/ferretdb2, its own Go module, keyed by a hash of its sources).
#
# When the engine cannot be had (not root, no sid mirror, a package missing
# from sid for a while), `up` falls back to scripts/ferretdb.sh (v1) and
# says so on stderr, unless PK_MONGO_ENGINE=ferretdb2 demands v2. With
# PK_MONGO_ENGINE=ferretdb1 it starts v1 directly. When MONGO_URI is set the
# tests use that server, so nothing is started.
set -euo pipefail
. "$(dirname "$0")/pidfile.sh"

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1
dir=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${PK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/prepkey}
src=$root/tools/ferretdb2
log() { echo "mongo-engine.sh: $*" >&2; }

# runner builds (once) and prints the path of the FerretDB v2 runner.
runner() {
	local key bin
	key=$( (cat "$src/main.go" "$src/go.mod" "$src/go.sum"; go version) | sha256sum | cut -c1-16)
	bin=$cache/ferretdb2-$key
	if [[ ! -x $bin ]]; then
		mkdir -p "$cache"
		log "building the FerretDB v2 runner (cold: several minutes)"
		(cd "$src" && go build -o "$bin.tmp.$$" .) >&2
		mv "$bin.tmp.$$" "$bin"
	fi
	echo "$bin"
}

# pgroot makes (once) and prints the directory that PostgreSQL with
# DocumentDB runs in.
pgroot() {
	local tree=$cache/documentdb-root
	if [[ -x $tree/usr/bin/dash && -f $tree/.complete ]]; then
		echo "$tree"
		return
	fi
	[[ $(id -u) -eq 0 ]] || { log "making the DocumentDB tree needs root (apt-get, chroot)"; return 1; }
	# One maker at a time (two test runs on a cold cache); the lock goes
	# with this subshell.
	mkdir -p "$cache"
	exec 9>"$cache/documentdb-root.lock"
	flock 9
	if [[ -x $tree/usr/bin/dash && -f $tree/.complete ]]; then
		echo "$tree"
		return
	fi
	command -v apt-get >/dev/null || { log "no apt-get"; return 1; }
	local mirror tmp pkg
	mirrorof() { apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null | awk '$2 == "bookworm" || $2 == "trixie" {print $1; exit}'; }
	mirror=$(mirrorof)
	if [[ -z $mirror ]]; then
		apt-get update -qq >&2
		mirror=$(mirrorof)
	fi
	[[ -n $mirror ]] || { log "no Debian mirror in this machine's apt sources"; return 1; }
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/mongo-engine-apt.XXXXXX")
	mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/debs"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main" >"$tmp/sources.list"
	local apt=(-o "Dir::Etc::sourcelist=$tmp/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::lists=$tmp/lists"
		-o "Dir::Cache=$tmp/cache" -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
	log "fetching PostgreSQL with DocumentDB from Debian sid into $tree (cold: ~140 MB)"
	apt-get "${apt[@]}" update -qq >&2
	# The newest PostgreSQL major that sid builds DocumentDB for.
	pkg=$(apt-cache "${apt[@]}" pkgnames postgresql- | grep -E '^postgresql-[0-9]+-documentdb$' | sort -V | tail -n1)
	[[ -n $pkg ]] || { log "Debian sid has no postgresql-*-documentdb now"; rm -rf "$tmp"; return 1; }
	# The whole dependency closure from an empty system (libc included:
	# the tree runs on its own libraries), and dash for initdb's popen.
	local names
	names=$(apt-get "${apt[@]}" -s install --no-install-recommends "$pkg" dash 2>/dev/null | awk '/^Inst /{print $2}')
	[[ -n $names ]] || { log "apt-get cannot resolve $pkg in sid"; rm -rf "$tmp"; return 1; }
	# shellcheck disable=SC2086 # one name a word
	(cd "$tmp/debs" && apt-get "${apt[@]}" download -qq $names) >&2
	rm -rf "$tree.tmp" && mkdir -p "$tree.tmp"
	for f in "$tmp"/debs/*.deb; do dpkg -x "$f" "$tree.tmp"; done
	rm -rf "$tmp"
	(
		cd "$tree.tmp"
		# merged /usr, which base-files would lay out
		for d in bin sbin lib lib64; do [[ -e usr/$d && ! -e $d ]] && ln -s "usr/$d" "$d"; done
		mkdir -p tmp dev/shm run && chmod 1777 tmp dev/shm
		mknod -m 666 dev/null c 1 3
		# nobody runs PostgreSQL (it refuses root); DocumentDB's workers
		# connect to "localhost".
		cp /etc/passwd /etc/group etc/
		printf '127.0.0.1 localhost\n::1 localhost\n' >etc/hosts
		printf 'passwd: files\ngroup: files\nhosts: files\n' >etc/nsswitch.conf
		# postgis.control is an alternative that the postinst would link.
		for f in usr/share/postgresql/*/extension/postgis*-3.control; do
			ln -sfn "$(basename "$f")" "${f%-3.control}.control"
		done
		echo "$pkg" >.complete
	)
	rm -rf "$tree" && mv "$tree.tmp" "$tree"
	echo "$tree"
}

# freeport prints a TCP port on 127.0.0.1 that nothing listens on now.
freeport() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	return 1
}

up2() {
	local tree bin pgbin run port uri=""
	# The runner's cold build and the tree's download overlap.
	runner >"$dir/runner.path" 2>"$dir/runner.log" &
	local builder=$!
	if ! tree=$(pgroot); then
		wait "$builder" || true
		return 1
	fi
	if ! wait "$builder"; then
		cat "$dir/runner.log" >&2
		return 1
	fi
	bin=$(cat "$dir/runner.path")
	pgbin=$(cd "$tree" && echo usr/lib/postgresql/*/bin)
	pgbin=/${pgbin%% *}
	# The data lives inside the tree, where the chroot sees it.
	run=$(mktemp -d "$tree/run/pg.XXXXXX")
	echo "$run" >"$dir/pgrun"
	chown nobody "$run"
	local as=(chroot --userspec=nobody:nogroup "$tree")
	"${as[@]}" "$pgbin/initdb" -D "/run/${run##*/}/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; return 1; }
	cat >>"$run/data/postgresql.conf" <<-EOF
		shared_preload_libraries = 'pg_cron,pg_documentdb_core,pg_documentdb'
		cron.database_name = 'postgres'
		documentdb.enableUserCrud = true
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '/run/${run##*/}'
		max_connections = 300
		fsync = off
		synchronous_commit = off
		full_page_writes = off
	EOF
	for _ in 1 2 3; do
		port=$(freeport)
		"${as[@]}" "$pgbin/postgres" -D "/run/${run##*/}/data" -c port="$port" >"$dir/postgres.log" 2>&1 &
		echo $! >"$dir/postgres.pid"
		for _ in $(seq 300); do
			if "${as[@]}" "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres; then
				break 2
			fi
			kill -0 "$(cat "$dir/postgres.pid")" 2>/dev/null || break
			sleep 0.1
		done
		stop_pidfile "$dir/postgres.pid"
	done
	if [[ ! -f $dir/postgres.pid ]]; then
		log "PostgreSQL did not start; log:"
		cat "$dir/postgres.log" >&2
		return 1
	fi
	"${as[@]}" "$pgbin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -c 'CREATE EXTENSION documentdb CASCADE' >"$dir/psql.log" 2>&1 ||
		{ cat "$dir/psql.log" >&2; return 1; }
	rm -f "$dir/ferretdb2.uri"
	"$bin" -listen 127.0.0.1:0 -postgresql-url "postgres://postgres@127.0.0.1:$port/postgres" -state-dir "$dir/ferretdb2-state" \
		>"$dir/ferretdb2.uri" 2>"$dir/ferretdb2.log" &
	echo $! >"$dir/ferretdb2.pid"
	# The runner prints its URI once the listener is bound.
	for _ in $(seq 300); do
		uri=$(head -n1 "$dir/ferretdb2.uri" 2>/dev/null || true)
		[[ -n $uri ]] && break
		kill -0 "$(cat "$dir/ferretdb2.pid")" 2>/dev/null || break
		sleep 0.1
	done
	if [[ -z $uri ]]; then
		log "FerretDB v2 printed no URI; log:"
		cat "$dir/ferretdb2.log" >&2
		return 1
	fi
	echo "export PK_TEST_MONGO_URI='$uri'"
	echo "export PK_TEST_MONGO_ENGINE=ferretdb2"
}

up() {
	if [[ -n ${MONGO_URI:-} ]]; then
		log "MONGO_URI is set; the tests use it, no engine started"
		return
	fi
	mkdir -p "$dir"
	local engine=${PK_MONGO_ENGINE:-}
	if [[ $engine != ferretdb1 ]]; then
		if up2; then
			return
		fi
		down2
		if [[ $engine == ferretdb2 ]]; then
			log "FerretDB v2 could not be started and PK_MONGO_ENGINE=ferretdb2"
			exit 1
		fi
		log "WARNING: FerretDB v2 on DocumentDB could not be started (above); falling back to FerretDB v1," \
			"on which the MongoDB race and Decimal128 tests are skipped"
	fi
	"$root/scripts/ferretdb.sh" up "$dir/v1"
	echo "export PK_TEST_MONGO_ENGINE=ferretdb1"
}

down2() {
	stop_pidfile "$dir/ferretdb2.pid"
	# SIGINT is PostgreSQL's fast shutdown (SIGTERM, stop_pidfile's, waits
	# for clients); its children exit with it.
	if [[ -f $dir/postgres.pid ]]; then
		local pid
		pid=$(cat "$dir/postgres.pid")
		kill -INT "$pid" 2>/dev/null || true
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		stop_pidfile "$dir/postgres.pid"
	fi
	if [[ -f $dir/pgrun ]]; then
		rm -rf "$(cat "$dir/pgrun")" "$dir/pgrun"
	fi
	rm -rf "$dir/ferretdb2.uri" "$dir/ferretdb2-state" "$dir/runner.path"
}

down() {
	down2
	"$root/scripts/ferretdb.sh" down "$dir/v1"
}

case $cmd in
up) up ;;
down) down ;;
*) usage ;;
esac
