#!/usr/bin/env bash
# Tests the npm package as it would be published (issue 29 item 5): packs
# clients/node/prepkey with `npm pack`, checks the tarball holds exactly
# what should ship (LICENSE, README.md, the code and its types,
# package.json: no tests, no node_modules), installs the TARBALL, not the
# folder, into a fresh project with ioredis and redis from clients/node's
# lock file (npm ci, from npm's cache when it has them), and runs the
# helper's tests, README examples included, against the installed package.
# clients/run.sh runs it as the node-package suite, with the PREPKEY_*
# variables of its sidecars set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-pack.XXXXXX")
trap 'rm -rf "$work"' EXIT

tarball=$(cd "$here/prepkey" && npm pack --silent --pack-destination "$work")
want=$(printf 'package/%s\n' LICENSE README.md index.d.ts index.js jackson.js package.json)
got=$(tar -tzf "$work/$tarball" | sort)
if [ "$got" != "$want" ]; then
	echo "$tarball holds other files than it should (- want, + got):" >&2
	diff <(echo "$want") <(echo "$got") >&2 || true
	exit 1
fi
echo "   $tarball: $(echo "$got" | tr '\n' ' ')"

mkdir "$work/project"
cp "$here/package.json" "$here/package-lock.json" "$work/project/"
cd "$work/project"
npm ci --prefer-offline --no-audit --no-fund --loglevel=error
npm install --prefer-offline --no-audit --no-fund --loglevel=error "$work/$tarball"
# The package the tests load is the unpacked tarball, not a link to the
# source folder.
if [ -L node_modules/prepkey ] || ! cmp -s node_modules/prepkey/LICENSE "$here/prepkey/LICENSE"; then
	echo "node_modules/prepkey is not the installed tarball" >&2
	exit 1
fi
# The tests (not shipped) beside the project; they require('prepkey'). The
# types test needs TypeScript and the source tree: it runs in node-helper-types.
cp -r "$here/prepkey/test" test
rm -rf test/types test/types.test.js
PREPKEY_TESTDATA="$here/../testdata" node --test --test-reporter=spec test/*.test.js
