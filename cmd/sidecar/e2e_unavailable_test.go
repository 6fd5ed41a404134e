package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBackendDown: with its Redis or MongoDB unreachable the sidecar still
// starts, says it is not ready, and answers every command -UNAVAILABLE
// within --backend-timeout — never :0 or nil.
func TestBackendDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, url := range []string{"redis://" + dead, "redis+cluster://" + dead, "mongodb://" + dead + "/?directConnection=true"} {
		t.Run(strings.SplitN(url, ":", 2)[0], func(t *testing.T) {
			t.Parallel()
			s := start(t, "--backend", url, "--backend-timeout", "300ms")
			c := s.client(t, 2)
			info, err := c.Info(ctx(), "backend").Result()
			require.NoError(t, err)
			require.Contains(t, info, "backend_ready:0\r\n")
			require.Contains(t, info, "backend_error:")
			for _, args := range [][]any{
				{"PK.PREPARE", "ns", "k", "v"},
				{"PK.GET", "ns", "k"},
				{"PK.GETVALUE", "ns", "k"},
				{"PK.ROLLBACK", "ns", "k", "IFEQ", "v"},
				{"PK.REPREPARE", "ns", "k", "v"},
				{"PK.REPREPARE", "ns", "k2", "v", "FROM", "k", "IFEQ", "v"},
			} {
				began := time.Now()
				_, err := c.Do(ctx(), args...).Result()
				require.Error(t, err, "%v", args)
				require.True(t, strings.HasPrefix(err.Error(), "UNAVAILABLE "), "%v: %v", args, err)
				// a key change may spend a second timeout on its undo
				require.Less(t, time.Since(began), 2*time.Second, "%v", args)
			}
			check(t, c, "PONG", "PING")
		})
	}
}
