//go:build wasip1 && wasmsock

package main

// The socket-capable WebAssembly build (-tags wasmsock, make wasm-sock): it
// dials Redis through the host's WasmEdge socket ABI (internal/wasisock).
// It needs a host that provides sock_open, sock_connect and
// sock_getaddrinfo: tools/wasmhost or WasmEdge; other runtimes refuse to
// instantiate it.

import (
	"context"
	"log/slog"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/redis"
	"github.com/prepkey/prepkey/internal/wasisock"
)

// openRedis opens a Redis store driven in batches through the rueidis
// client: the module has no event loops of their own connection
// (protocol/loop_wasip1.go), so a standalone Redis is not driven over
// Wire as natively.
func openRedis(ctx context.Context, c config, opts backend.Options, log *slog.Logger) (opened, error) {
	s, err := redis.Open(ctx, c.backendURL, redis.Config{Options: opts, KeyPrefix: c.redisKeyPrefix, Timeout: c.backendTimeout, Logger: log, Dial: wasisock.Dial})
	if err != nil {
		return opened{}, err
	}
	return opened{store: s}, nil
}
