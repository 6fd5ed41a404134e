// Command ferretdb2 runs FerretDB v2 for the MongoDB backend's tests, on a
// PostgreSQL with Microsoft's DocumentDB extension (started by
// scripts/mongo-engine.sh). Unlike FerretDB v1 on SQLite, this engine
// stores Decimal128, builds TTL and hashed indexes, and applies an update to
// one document atomically, so the race and linearizability tests can judge
// the MongoDB backend on it.
//
// It lives in its own module so that FerretDB's large dependency tree never
// enters the sidecar's go.mod, and embeds FerretDB through its package API
// (as tools/ferretdb does for v1).
//
// It prints the MongoDB URI on stdout once the listener is up, then serves
// until SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/v2/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "TCP address to listen on (port 0 picks a free one)")
	pg := flag.String("postgresql-url", "", "PostgreSQL URL of a database with the documentdb extension (required)")
	state := flag.String("state-dir", "", "directory for FerretDB's state file (required)")
	flag.Parse()

	if err := run(*listen, *pg, *state); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb2:", err)
		os.Exit(1)
	}
}

func run(listen, pg, state string) error {
	if pg == "" || state == "" {
		return fmt.Errorf("-postgresql-url and -state-dir are required")
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	f, err := ferretdb.New(&ferretdb.Config{
		PostgreSQLURL: pg,
		ListenAddr:    listen,
		StateDir:      state,
		LogLevel:      slog.LevelWarn,
		LogOutput:     os.Stderr,
	})
	if err != nil {
		return err
	}

	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()

	// MongoDBURI waits for Run to bind the listener, so the URI printed
	// here names a port that already accepts connections.
	fmt.Println(f.MongoDBURI())

	<-done
	return nil
}
