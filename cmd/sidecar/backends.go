package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/disk"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/commands"
)

// store is a backend as main holds it: the commands' Store plus Close.
type store interface {
	commands.Store
	io.Closer
}

// openBackend is the one place that reads a --backend URL's scheme and opens
// that backend. It returns the backend's kind for INFO.
func openBackend(ctx context.Context, c config) (store, string, error) {
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
	default:
		return nil, "", fmt.Errorf("--backend %q: unknown scheme %q (want memory, file, redis, rediss, redis+sentinel, redis+cluster, mongodb, mongodb+srv)", c.backendURL, scheme)
	}
}
