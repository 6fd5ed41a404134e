// Command ferretdb runs FerretDB v1 on SQLite for the MongoDB backend's
// tests, since no MongoDB server can be installed on the test machines.
//
// It lives in its own module so that FerretDB's large dependency tree never
// enters the sidecar's go.mod, and it embeds FerretDB through its package
// API because the upstream command built with `go install` panics at start
// ("Invalid build/version/version.txt").
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

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "TCP address to listen on (port 0 picks a free one)")
	dir := flag.String("dir", "", "directory for the SQLite databases (required)")
	flag.Parse()

	if err := run(*listen, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func run(listen, dir string) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: listen},
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Handler:   "sqlite",
		SQLiteURL: "file:" + dir + "/",
	})
	if err != nil {
		return err
	}

	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()

	// MongoDBURI waits for Run to bind the listener, so the URI printed
	// here names a port that already accepts connections.
	fmt.Println(f.MongoDBURI())

	return <-done
}
