#!/usr/bin/env bash
# Runs every test of prepkey: starts the real servers the tests need (Redis
# standalone, a 3-master cluster and a sentinel set; FerretDB v2 on DocumentDB
# for the MongoDB backend, scripts/mongo-engine.sh), runs vet and the tests,
# and stops the servers whatever happens.
#
#   scripts/test.sh                 # everything (what `make test` and CI run)
#   scripts/test.sh ./backend/...   # other packages or go test flags
#
# Needs Go, redis-server and redis-cli (apt-get install redis-server
# redis-tools). With MONGO_URI set, the MongoDB tests use that server instead
# of FerretDB.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-test.XXXXXX")
stop() {
	scripts/redis-servers.sh down "$dir/redis" >/dev/null 2>&1 || true
	scripts/mongo-engine.sh down "$dir/mongo" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap stop EXIT

echo "== starting test servers in $dir"
eval "$(scripts/redis-servers.sh up "$dir/redis")"
if [ -z "${MONGO_URI:-}" ]; then
	eval "$(scripts/mongo-engine.sh up "$dir/mongo")"
fi

echo "== go vet"
go vet ./...

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go test"
# Fuzz tests run their seed corpus as ordinary tests here.
all=
if [ $# -eq 0 ]; then set -- ./...; all=1; fi
go test -count=1 -timeout 12m "$@"

# The Go helper is a module of its own (client/go.mod): ./... above stops
# at its directory.
if [ -n "$all" ]; then
	echo "== client/ (the Go helper's module)"
	(cd client && go vet ./... && go test -count=1 -timeout 12m ./...)
fi
