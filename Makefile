# prepkey: the usual entry points. `make test` is what CI runs.
.PHONY: build run test test-short test-clients deps test-long test-race bench fuzz vet fmt clean wasm wasm-run wasm-sock release-check release-snapshot

# The binary as the image builds it (Dockerfile; scripts/build-sidecar.sh,
# which every measuring script uses):
# static (no cgo: Go's own resolver, no libc to load), without the build
# machine's paths, symbol table or DWARF. Idle, it holds 17.2 MB RSS on
# memory: where a plain `go build` (cgo, dynamic, 33 MB) holds 23.8 MB
# (docs/benchmarks.md, "Footprint").
build:
	scripts/build-sidecar.sh bin/sidecar

# Runs the sidecar on the embedded default store (./prepkey-data), on
# 127.0.0.1:6380.
run:
	go run ./cmd/sidecar

# The WebAssembly build (docs/wasm.md): prepkey.wasm, a WASI preview 1
# module that serves on a socket its host preopens, on memory:.
wasm:
	GOOS=wasip1 GOARCH=wasm go build -o prepkey.wasm ./cmd/sidecar

# Runs prepkey.wasm in the foreground under the wazero host (tools/wasmhost):
#   make wasm-run LISTEN=127.0.0.1:6380 ARGS='--backend memory: --requirepass pw'
LISTEN ?= 127.0.0.1:6380
ARGS ?= --backend memory:
wasm-run: wasm
	go build -C tools/wasmhost -o ../../bin/wasmhost .
	bin/wasmhost -wasm prepkey.wasm -listen $(LISTEN) -- $(ARGS)

# The socket-capable module (docs/wasm.md): it also dials redis:// through
# the WasmEdge socket ABI, which tools/wasmhost and WasmEdge provide.
wasm-sock:
	GOOS=wasip1 GOARCH=wasm go build -tags wasmsock -o prepkey-sock.wasm ./cmd/sidecar

# Installs what the tests need when it is missing (scripts/deps.sh), starts
# the Redis and FerretDB servers they need and runs every Go test; then the
# checks of the Kubernetes manifests, the Dockerfile and docker-compose.yml
# (a module of their own: k8s.io/api is heavy) and the wasm host's own
# tests (tools/wasmhost); then the release pipeline's
# check (release-check below); then the client suite in other languages
# (clients/).
# TestDockerfile builds the binary as the image does (static, -trimpath: a
# build cache of its own); on a fresh cache with the machine's two cores busy
# that took past go test's default 10 minutes once, hence -timeout 30m.
test: deps
	scripts/test.sh
	cd tools/k8svalidate && go vet ./... && go test -count=1 -timeout 30m ./...
	cd tools/wasmhost && go vet ./... && go test -count=1 ./...
	scripts/release-check.sh
	clients/run.sh

# The release pipeline without publishing (docs/releasing.md): goreleaser
# check, a snapshot build of every release target into dist/, and
# actionlint over .github/workflows. goreleaser and actionlint are built
# once and cached (scripts/release-check.sh). `make test` runs it.
release-check:
	scripts/release-check.sh

# Only the binaries and checksums of a release, into dist/, unpublished.
release-snapshot:
	scripts/release-check.sh snapshot

# The fast tier, for the edit-test loop: vet, then every package's core
# with -short, and no servers started (the tests that need Redis or MongoDB
# skip unless their variables are set; under CI=true they fail instead, as
# in `make test`). It leaves out what only `make test`
# runs: the linearizability checks, failovers and restarts of real servers,
# kills, full disks, the wasm build, and the conformance suite's repeats
# (layout=wow, the Wire, the composed key change) on miniredis.
test-short:
	go vet ./...
	go test -short -count=1 ./...
	cd client && go vet ./... && go test -short -count=1 ./...

# The examples in clients/ (Python, Node, Ruby, PHP) and client/examples (Go) against a fresh
# sidecar.
test-clients: deps
	clients/run.sh

# Debian's packages (as root, with apt-get) and clients/node's modules (npm
# ci); otherwise one line naming what to install.
deps:
	scripts/deps.sh

# The linearizability checks (docs/linearizability.md) with longer
# histories and more of them than `make test` runs; PK_LIN_SEED=n replays.
test-long:
	PK_LIN_LONG=1 scripts/test.sh -run 'TestLineariz' -v ./e2e/

# The race detector over the packages whose concurrency is their own.
test-race:
	go test -race -count=1 ./commands/ ./protocol/ ./backend/memory/ ./backend/disk/ ./backend/storetest/

bench:
	scripts/bench.sh

# A minute of coverage-guided fuzzing of the command parser.
fuzz:
	go test -run '^$$' -fuzz FuzzDo -fuzztime 60s ./commands/

vet:
	go vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin dist prepkey.wasm prepkey-sock.wasm
