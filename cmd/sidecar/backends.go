package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
)

// store is a backend's store as main holds it: the store contract plus
// Close.
type store interface {
	backend.Store
	io.Closer
}

// opened is a backend as its opener hands it to main: the store and the
// kind INFO names. How the server takes PK commands to the store is what
// the store declares of itself (backend.Info: Completes, Joins), read by
// the server (package protocol's scheduler), not its opener's to say.
type opened struct {
	store store
	kind  string
	// serveLoops gives a standalone Redis store's loop connections
	// (loopconn.Loops.Serve) the server's count of them up (INFO's
	// loop_backend_conns) and its closing; nil for the other stores.
	serveLoops func(up *atomic.Int64, closing func() bool)
}

// openBackend is the one place that reads a --backend URL's scheme and opens
// that backend. The backends that do not run in the WebAssembly build are
// opened by openFile, openRedis and openMongo (backends_native.go; wasip1.go
// refuses them).
func openBackend(ctx context.Context, c config, log *slog.Logger) (opened, error) {
	opts := backend.Options{Retention: c.retention, MaxValueBytes: c.maxValueBytes, Now: storeClock()}
	scheme, rest, ok := strings.Cut(c.backendURL, ":")
	if !ok {
		return opened{}, fmt.Errorf("--backend %q has no scheme (want memory:, file:DIR, redis://…, mongodb://…)", c.backendURL)
	}
	switch strings.ToLower(scheme) {
	case "memory":
		if rest != "" {
			return opened{}, fmt.Errorf("--backend memory: takes nothing after the colon, got %q", c.backendURL)
		}
		return opened{store: memory.New(opts), kind: "memory"}, nil
	case "file":
		dir, err := fileDir(rest)
		if err != nil {
			return opened{}, err
		}
		o, err := openFile(dir, opts, int64(c.fileCacheMB)<<20, int64(c.minFreeDisk))
		if err != nil {
			return opened{}, fmt.Errorf("--backend %s: %w", c.backendURL, err)
		}
		o.kind = "file"
		return o, nil
	case "redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster":
		// Open fails only on a malformed URL: a Redis that is down makes
		// the sidecar start not-ready (INFO) and recover by itself.
		o, err := openRedis(ctx, c, opts, log)
		if err != nil {
			return opened{}, fmt.Errorf("--backend: %w", err)
		}
		o.kind = strings.ToLower(scheme)
		return o, nil
	case "mongodb", "mongodb+srv":
		o, err := openMongo(ctx, c, opts, log)
		if err != nil {
			return opened{}, fmt.Errorf("--backend: %w", err)
		}
		o.kind = strings.ToLower(scheme)
		return o, nil
	default:
		return opened{}, fmt.Errorf("--backend %q: unknown scheme %q (want memory, file, redis, rediss, redis+sentinel, redis+cluster, mongodb, mongodb+srv)", c.backendURL, scheme)
	}
}

// fileDir is the directory of a file: URL: file:DIR (relative or
// absolute), or file:///abs/dir as a URL writes it. A host (file://h/dir)
// or a query or fragment is refused rather than read as part of a path:
// file://data/x was once the relative directory data/x.
func fileDir(rest string) (string, error) {
	dir := rest
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		if !strings.HasPrefix(after, "/") {
			return "", fmt.Errorf("--backend file://%s: a file: URL names a local directory: file:DIR or file:///absolute/dir", after)
		}
		dir = after
	}
	switch {
	case dir == "":
		return "", fmt.Errorf("--backend file: needs a directory, e.g. file:./prepkey-data")
	case strings.ContainsAny(dir, "?#"):
		return "", fmt.Errorf("--backend file:%s: a file: URL takes no query or fragment (? or #)", rest)
	}
	return dir, nil
}
