#!/usr/bin/env bash
# Builds one Redis or Valkey source tree and runs the tests that use a real
# Redis (standalone, Sentinel, Cluster, TLS) against it. Not run in CI, which
# has only Debian's redis-server; docs/redis.md ("Versions tested") lists the
# versions run so far and what they found.
#
#   scripts/redis-versions.sh SRC_DIR [go test packages or flags...]
#
# SRC_DIR is an unpacked source tree (Redis 6.0 or later, or Valkey), e.g.
#   git --git-dir=REDIS.git archive 7.4.1 | tar -x -C /tmp/redis-versions/7.4.1
# It is built in place (make, with TLS, as the Debian package is) and
# installed into SRC_DIR/prepkey-bin; Valkey installs its redis-server and
# redis-cli names there too. The tests then run through scripts/test.sh with
# that directory first on PATH, so scripts/redis-servers.sh and the tests
# that start servers of their own use the built ones. The default packages
# are those that talk to Redis: ./backend/redis/... ./e2e/...
# ./protocol/... . The built server's INFO server (version, git sha) is
# printed first; the whole output goes to SRC_DIR/prepkey-test-HHMMSS.log.
#
# Env: JOBS (make -j, default 2), MAKEFLAGS_EXTRA (e.g. MALLOC=libc when
# jemalloc does not build), SKIP_BUILD=1 to test an install done before.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 SRC_DIR [go test args...]" >&2; exit 2; }
src=$(cd "$1" && pwd)
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$src/prepkey-bin

if [ "${SKIP_BUILD:-0}" != 1 ]; then
	echo "== building $src"
	# shellcheck disable=SC2086 # MAKEFLAGS_EXTRA is a list of make arguments
	make -C "$src" -j"${JOBS:-2}" BUILD_TLS=yes ${MAKEFLAGS_EXTRA:-} >"$src/prepkey-build.log" 2>&1 || {
		tail -30 "$src/prepkey-build.log" >&2
		echo "build failed; see $src/prepkey-build.log" >&2
		exit 1
	}
	# shellcheck disable=SC2086
	make -C "$src" install PREFIX="$bin" BUILD_TLS=yes ${MAKEFLAGS_EXTRA:-} >>"$src/prepkey-build.log" 2>&1
fi
export PATH=$bin/bin:$PATH

# The version really run: the binaries on PATH, and a server's own INFO.
command -v redis-server redis-cli
redis-server --version
tmp=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-version.XXXXXX")
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
up=
for _ in 1 2 3; do # a random port another process may hold: try another
	port=$((20000 + RANDOM % 30000))
	redis-server --port "$port" --bind 127.0.0.1 --daemonize yes --dir "$tmp" \
		--save '' --logfile "$tmp/log" --pidfile "$tmp/pid" || true
	for _ in $(seq 100); do
		if redis-cli -p "$port" ping >/dev/null 2>&1; then up=1; break 2; fi
		sleep 0.1
	done
done
[ -n "$up" ] || { cat "$tmp/log" >&2; echo "redis-server did not start" >&2; exit 1; }
redis-cli -p "$port" info server | grep -E '^(redis_version|valkey_version|server_name|redis_git_sha1|redis_git_dirty|redis_build_id):'

# How this server turns a Lua number given to a command into text: the
# scripts format times with string.format('%.0f') themselves, and this
# shows whether a bare number would have done (docs/redis.md, Scripts).
# Integers below 2^53: d * 10^j, 2^i and 2^i - 1, and random ones.
cat >"$tmp/numbers.lua" <<'LUA'
local bad, n = {}, 0
local function check(x)
  if x < 9007199254740992 then
    n = n + 1
    redis.call('SET', KEYS[1], x)
    local got = redis.call('GET', KEYS[1])
    if got ~= string.format('%.0f', x) and #bad < 5 then
      bad[#bad + 1] = string.format('%.0f', x) .. ' -> ' .. got
    end
  end
end
for d = 1, 9999 do
  local p = 1
  for _ = 0, 15 do check(d * p); p = p * 10 end
end
local s = 1
for _ = 1, 53 do check(s); check(s - 1); s = s * 2 end
math.randomseed(7)
for _ = 1, 20000 do check(math.floor(math.random() * 9007199254740991)) end
redis.call('DEL', KEYS[1])
return {n, unpack(bad)}
LUA
echo "Lua numbers as command arguments (count, then any written otherwise than %.0f):"
# (8.0-m01's redis-cli aborts with "free(): invalid pointer" after printing
# an --eval reply: reported, not fatal)
redis-cli -p "$port" --eval "$tmp/numbers.lua" prepkey:numbers | tr '\n' ' ' ||
	echo "(redis-cli exited ${PIPESTATUS[0]})"
echo
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true

if [ $# -eq 0 ]; then set -- ./backend/redis/... ./e2e/... ./protocol/...; fi
cd "$repo"
log=$src/prepkey-test-$(date +%H%M%S).log
echo "== scripts/test.sh -v $* (PATH starts with $bin/bin); output in $log"
set +e
CI=true scripts/test.sh -v "$@" >"$log" 2>&1
rc=$?
set -e
# the summary: each package's result and every test that failed or skipped
grep -E '^(--- (FAIL|SKIP)|FAIL|ok |panic)' "$log" || true
echo "== exit $rc; full output in $log"
exit "$rc"
