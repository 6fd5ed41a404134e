#!/usr/bin/env bash
# Checks the release pipeline without publishing anything (`make
# release-check`, run by `make test`):
#   check     goreleaser check: .goreleaser.yaml is valid;
#   snapshot  goreleaser build --snapshot --clean: every release target
#             (prepkey for linux and darwin on amd64 and arm64) builds,
#             into dist/;
#   lint      actionlint: the GitHub workflows (.github/workflows) are
#             valid, their shell steps included when shellcheck is
#             installed.
# With no argument, all three.
#
# goreleaser and actionlint are Go programs, built once with `go install`
# through the module proxy and cached under $PK_CACHE_DIR (default
# ${XDG_CACHE_HOME:-~/.cache}/prepkey), keyed by their version and the Go
# version, as scripts/ferretdb.sh caches its runner. A cold goreleaser
# build is heavy: 6.6 CPU-minutes (45 minutes of wall time on a 2-core
# machine shared with other builds); actionlint's, 10 s.
set -euo pipefail
cd "$(dirname "$0")/.."

# v2.17.0: the newest goreleaser that builds with Go 1.26 (v2.18 needs
# Go 1.27). The release workflow runs the same version.
GORELEASER=github.com/goreleaser/goreleaser/v2@v2.17.0
ACTIONLINT=github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

# tool NAME PKG@VERSION: the path of the cached binary, built if missing.
tool() {
	local name=$1 pkg=$2 cache key bin tmp
	cache=${PK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/prepkey}
	key=$(printf '%s %s' "$pkg" "$(go version)" | sha256sum | cut -c1-16)
	bin=$cache/$name-$key
	if [ ! -x "$bin" ]; then
		mkdir -p "$cache"
		tmp=$(mktemp -d "$cache/.install.XXXXXX")
		echo "release-check.sh: building $pkg (once; cached as $bin)" >&2
		(cd "$tmp" && GOBIN="$tmp" GOFLAGS= go install "$pkg") >&2
		mv "$tmp/$name" "$bin"
		rm -rf "$tmp"
	fi
	echo "$bin"
}

what=${1:-all}
case $what in
check | snapshot | lint | all) ;;
*) echo "usage: $0 [check|snapshot|lint|all]" >&2; exit 2 ;;
esac

if [ "$what" = check ] || [ "$what" = snapshot ] || [ "$what" = all ]; then
	goreleaser=$(tool goreleaser "$GORELEASER")
	echo "== goreleaser check"
	"$goreleaser" check
fi
if [ "$what" = snapshot ] || [ "$what" = all ]; then
	echo "== goreleaser build --snapshot --clean (dist/)"
	start=$(date +%s)
	"$goreleaser" build --snapshot --clean
	# The Linux targets are static binaries (file(1) tells, where installed).
	if command -v file >/dev/null; then
		for bin in dist/prepkey_linux_*/prepkey; do
			file "$bin" | grep -q 'statically linked' || { echo "$bin is not statically linked" >&2; exit 1; }
		done
	fi
	# The one this machine runs says the version `git describe` says. In a
	# clone without a remote goreleaser ignores the git state in snapshot
	# mode and stamps "none": then only the line's form is checked.
	native=$(ls -d dist/prepkey_"$(go env GOOS)"_"$(go env GOARCH)"*/prepkey | head -1)
	want="^prepkey $(git describe --tags --always --dirty) commit $(git rev-parse HEAD) go"
	if [ -z "$(git remote)" ]; then
		want="^prepkey none commit none go"
	fi
	"$native" --version | grep -q "$want" ||
		{ echo "$native --version: $("$native" --version), want $want" >&2; exit 1; }
	(cd dist && find . -name prepkey -type f | sort | xargs sha256sum)
	echo "release-check.sh: 4 targets built in $(($(date +%s) - start)) s"
fi
if [ "$what" = lint ] || [ "$what" = all ]; then
	actionlint=$(tool actionlint "$ACTIONLINT")
	echo "== actionlint"
	"$actionlint" -no-color
fi
