#!/usr/bin/env bash
# Builds the sidecar as the image does (the Dockerfile's RUN line; `make
# build`): static (CGO_ENABLED=0: Go's own resolver, no libc to load),
# without the build machine's paths (-trimpath), symbol table or DWARF
# (-ldflags='-s -w'). Every script that measures the sidecar builds it
# here, so that its figures are the shipped binary's: a plain `go build` on
# a machine with a C compiler links a dynamic binary (33 MB) that idles
# about 6 MB higher (docs/benchmarks.md, "Footprint"). It stamps the version
# as a release does (internal/version). tools/k8svalidate's TestDockerfile
# checks that these flags are the Dockerfile's.
#
# Usage: scripts/build-sidecar.sh OUT [SRC]
#   OUT  the binary to write
#   SRC  the source tree to build (default: this one), e.g. a `git archive`
#        of another commit, built with today's flags
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUT [SRC]" >&2; exit 2; }
out=$(realpath -m "$1") # absolute: go build -C changes directory first
src=${2:-$(dirname "$0")/..}
# The version as internal/version reads it: `git describe` of the tree
# built, when it is a checkout (a `git archive` is not: it says "devel").
version='' commit=''
if [ -e "$src/.git" ]; then
	version=$(git -C "$src" describe --tags --always --dirty)
	commit=$(git -C "$src" rev-parse HEAD)
fi
pkg=github.com/prepkey/prepkey/internal/version
CGO_ENABLED=0 go build -C "$src" -trimpath -ldflags="-s -w -X $pkg.version=$version -X $pkg.commit=$commit" -o "$out" ./cmd/sidecar
