package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/upstream"
)

// store is a backend as main holds it: the commands' Store plus Close.
type store interface {
	commands.Store
	io.Closer
}

// openBackend is the one place that reads a --backend URL's scheme and opens
// that backend. It returns the backend's kind for INFO, and the Wire of a
// store that declares backend.DriveWire (a standalone Redis), for the event
// loops to reach it over connections of their own; nil for the others. The
// backends that do not run in the WebAssembly build are opened by openFile,
// openRedis and openMongo (backends_native.go; wasip1.go refuses them).
func openBackend(ctx context.Context, c config, log *slog.Logger) (store, string, upstream.Wire, error) {
	opts := backend.Options{Retention: c.retention}
	scheme, rest, ok := strings.Cut(c.backendURL, ":")
	if !ok {
		return nil, "", nil, fmt.Errorf("--backend %q has no scheme (want memory:, file:DIR, redis://…, mongodb://…)", c.backendURL)
	}
	switch strings.ToLower(scheme) {
	case "memory":
		if rest != "" {
			return nil, "", nil, fmt.Errorf("--backend memory: takes nothing after the colon, got %q", c.backendURL)
		}
		return memory.New(opts), "memory", nil, nil
	case "file":
		dir := strings.TrimPrefix(rest, "//")
		if dir == "" {
			return nil, "", nil, fmt.Errorf("--backend file: needs a directory, e.g. file:./prepkey-data")
		}
		s, err := openFile(dir, opts, int64(c.fileCacheMB)<<20, int64(c.minFreeDisk))
		if err != nil {
			return nil, "", nil, fmt.Errorf("--backend %s: %w", c.backendURL, err)
		}
		return s, "file", nil, nil
	case "redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster":
		// Open fails only on a malformed URL: a Redis that is down makes
		// the sidecar start not-ready (INFO) and recover by itself.
		s, w, err := openRedis(ctx, c, opts, log)
		if err != nil {
			return nil, "", nil, fmt.Errorf("--backend: %w", err)
		}
		return s, strings.ToLower(scheme), w, nil
	case "mongodb", "mongodb+srv":
		s, err := openMongo(ctx, c, opts, log)
		if err != nil {
			return nil, "", nil, fmt.Errorf("--backend: %w", err)
		}
		return s, strings.ToLower(scheme), nil, nil
	default:
		return nil, "", nil, fmt.Errorf("--backend %q: unknown scheme %q (want memory, file, redis, rediss, redis+sentinel, redis+cluster, mongodb, mongodb+srv)", c.backendURL, scheme)
	}
}
