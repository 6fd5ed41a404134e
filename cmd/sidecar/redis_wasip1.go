//go:build wasip1 && !wasmsock

package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prepkey/prepkey/backend"
)

// openRedis refuses: this module imports no socket functions, so that it
// runs on any WASI runtime; the socket-capable build is another module.
func openRedis(context.Context, config, backend.Options, *slog.Logger) (opened, error) {
	return opened{}, errors.New("the redis backend is not in this WebAssembly build: WASI preview 1 cannot open connections; build the socket-capable module (make wasm-sock, -tags wasmsock) and run it under a host with the WasmEdge socket ABI (tools/wasmhost, WasmEdge), or use memory: (docs/wasm.md)")
}
