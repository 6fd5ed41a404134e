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

// TestOpenBackendDrive: each backend's opener says how the server drives
// it, and hands main a Wire exactly with DriveWire (a standalone Redis):
// memory: on the loop, file: in batches, a Redis Cluster in batches
// through rueidis, MongoDB one call at a time.
func TestOpenBackendDrive(t *testing.T) {
	cases := []struct {
		name, url string
		want      backend.Drive
	}{
		{"memory", "memory:", backend.DriveInline},
		{"file", "file:" + t.TempDir(), backend.DriveBatch},
		{"redis", os.Getenv("PREPKEY_REDIS_URL"), backend.DriveWire},
		{"redis-cluster", os.Getenv("PREPKEY_REDIS_CLUSTER_URL"), backend.DriveBatch},
		{"mongo", os.Getenv("PK_TEST_MONGO_URI"), backend.DriveCalls},
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
			require.Equal(t, c.want, o.drive)
			if c.want == backend.DriveWire {
				require.NotNil(t, o.wire)
			} else {
				require.Nil(t, o.wire)
			}
		})
	}
}
