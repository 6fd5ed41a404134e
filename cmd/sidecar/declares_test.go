//go:build !wasip1

package main

import (
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestOpenBackendDeclares: the store each backend's opener hands main
// declares how it completes a submission and whether runs join
// (backend.Info), which is all the server's scheduler reads of it:
// memory: at once (answered on the loop), file: elsewhere with runs joined
// (one fsync), a standalone Redis on the loop's own connection (OnLoop), a
// Redis Cluster elsewhere through rueidis (one pipeline), MongoDB
// elsewhere, each run its own (no batch of atomic document operations).
func TestOpenBackendDeclares(t *testing.T) {
	type decl struct {
		completes backend.Completion
		joins     bool
	}
	cases := []struct {
		name, url string
		want      decl
	}{
		{"memory", "memory:", decl{backend.AtOnce, false}},
		{"file", "file:" + t.TempDir(), decl{backend.Elsewhere, true}},
		{"redis", os.Getenv("PREPKEY_REDIS_URL"), decl{backend.OnLoop, true}},
		{"redis-cluster", os.Getenv("PREPKEY_REDIS_CLUSTER_URL"), decl{backend.Elsewhere, true}},
		{"mongo", os.Getenv("PK_TEST_MONGO_URI"), decl{backend.Elsewhere, false}},
	}
	if u := os.Getenv("MONGO_URI"); u != "" {
		cases[len(cases)-1].url = u
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.url == "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI=true but no URL for %s: scripts/test.sh starts that server", c.name)
				}
				t.Skip("no server for", c.name)
			}
			cfg, err := parseConfig([]string{"--backend", c.url}, func(string) string { return "" }, io.Discard)
			require.NoError(t, err)
			o, err := openBackend(t.Context(), cfg, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			t.Cleanup(func() { _ = o.store.Close() })
			i := o.store.Info()
			require.Equal(t, c.want, decl{i.Completes, i.Joins})
		})
	}
}
