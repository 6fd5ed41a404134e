package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/disk"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/backend/mongo"
	"github.com/prepkey/prepkey/backend/redis"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol"
)

// store is a backend as main holds it: the commands' Store plus Close.
type store interface {
	commands.Store
	io.Closer
}

// openBackend is the one place that reads a --backend URL's scheme and opens
// that backend. It returns the backend's kind for INFO.
func openBackend(ctx context.Context, c config, log *slog.Logger) (store, string, error) {
	opts := backend.Options{Retention: c.retention}
	scheme, rest, ok := strings.Cut(c.backendURL, ":")
	if !ok {
		return nil, "", fmt.Errorf("--backend %q has no scheme (want memory:, file:DIR, redis://…, mongodb://…)", c.backendURL)
	}
	switch strings.ToLower(scheme) {
	case "memory":
		if rest != "" {
			return nil, "", fmt.Errorf("--backend memory: takes nothing after the colon, got %q", c.backendURL)
		}
		return memory.New(opts), "memory", nil
	case "file":
		dir := strings.TrimPrefix(rest, "//")
		if dir == "" {
			return nil, "", fmt.Errorf("--backend file: needs a directory, e.g. file:./prepkey-data")
		}
		s, err := disk.Open(dir, opts)
		if err != nil {
			return nil, "", fmt.Errorf("--backend %s: %w", c.backendURL, err)
		}
		return s, "file", nil
	case "redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster":
		// Open fails only on a malformed URL: a Redis that is down makes
		// the sidecar start not-ready (INFO) and recover by itself.
		s, err := redis.Open(ctx, c.backendURL, redis.Config{Options: opts, KeyPrefix: c.redisKeyPrefix, Timeout: c.backendTimeout, Logger: log})
		if err != nil {
			return nil, "", fmt.Errorf("--backend: %w", err)
		}
		return s, strings.ToLower(scheme), nil
	case "mongodb", "mongodb+srv":
		s, err := mongo.Open(ctx, c.backendURL, mongo.Config{Options: opts, Timeout: c.backendTimeout, Logger: log})
		if err != nil {
			return nil, "", fmt.Errorf("--backend: %w", err)
		}
		return s, strings.ToLower(scheme), nil
	default:
		return nil, "", fmt.Errorf("--backend %q: unknown scheme %q (want memory, file, redis, rediss, redis+sentinel, redis+cluster, mongodb, mongodb+srv)", c.backendURL, scheme)
	}
}

// wireOf is the backend's Wire, for the event loops to reach it over their
// own connections, or nil.
func wireOf(st store) protocol.Wire {
	if rs, ok := st.(*redis.Store); ok {
		if w := rs.Wire(); w != nil {
			return w
		}
	}
	return nil
}
