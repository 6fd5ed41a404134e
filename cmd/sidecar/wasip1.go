//go:build wasip1

package main

// The WebAssembly build (GOOS=wasip1, docs/wasm.md). WASI preview 1 gives a
// module no way to open a socket or connect: it serves on a socket its host
// preopened, on the memory: store; built with -tags wasmsock it also reaches
// a Redis through its host's socket ABI (redis_wasmsock.go).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"

	"github.com/prepkey/prepkey/backend"
)

// defaultListen is the first socket the host preopened: wazero's
// WithTCPListener, `wazero run -listen`, wasmtime's --tcplisten.
const defaultListen = "fd:auto"

// pebble does not build for wasip1: its vfs has no wasip1 file locking,
// disk-usage or fsync code, and its allocator no wasm array bound.
var errNoFile = errors.New("the file: backend is not in the WebAssembly build: its store (pebble) does not build for wasip1; use memory: (docs/wasm.md)")

// noConnect is the refusal of a backend that is a server to connect to:
// WASI preview 1 has the sockets the host opened, but no connect.
func noConnect(kind string) error {
	return fmt.Errorf("the %s backend is not in the WebAssembly build: WASI preview 1 cannot open connections; use memory: (docs/wasm.md)", kind)
}

func openFile(string, backend.Options, int64, int64) (opened, error) { return opened{}, errNoFile }

func openMongo(context.Context, config, backend.Options, *slog.Logger) (opened, error) {
	return opened{}, noConnect("mongodb")
}

// netListen refuses: WASI preview 1 cannot open a socket, and Go's
// net.Listen on wasip1 answers with an in-process fake that no client can
// reach: the sidecar would seem to serve.
func netListen(string, string) (net.Listener, error) {
	return nil, errors.New("the WebAssembly build cannot open sockets: the host preopens one, and the module serves on it with --listen fd:N or fd:auto (docs/wasm.md)")
}

// inheritedSocket is fd:auto's descriptor: the first preopened socket.
// Preopens are numbered from 3 without gaps (directories may come first).
func inheritedSocket() (int, error) {
	for fd := 3; fd < 3+64; fd++ {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			if errors.Is(err, syscall.EBADF) {
				break
			}
			continue
		}
		if st.Filetype == syscall.FILETYPE_SOCKET_STREAM {
			return fd, nil
		}
	}
	return 0, errors.New("fd:auto: the host preopened no socket (wazero: WithTCPListener or run -listen; wasmtime: --tcplisten)")
}

// checkListening: WASI preview 1 cannot tell; a preopened socket listens.
func checkListening(net.Listener) error { return nil }

// signalContext never ends: WASI preview 1 delivers no signals (the host
// closes the module), and os/signal's watcher would keep Go's scheduler
// from ever waiting on the sockets: the module would serve nothing.
func signalContext() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}
