package commands

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClockOnlyForTTL: a command reads the clock only for a TTL option,
// the one that needs it: a PK.PREPARE without one reads it not at all.
func TestClockOnlyForTTL(t *testing.T) {
	reads := 0
	h := New(&fakeStore{ok: true}, DefaultLimits, func() time.Time { reads++; return time.UnixMilli(1e12) })
	run := func(args ...string) Reply {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		r, ok := h.Do(context.Background(), b)
		require.True(t, ok)
		return r
	}
	require.Equal(t, Reply{Kind: Int, Int: 1}, run("PK.PREPARE", "ns", "a", "v"))
	require.Equal(t, Reply{Kind: Int, Int: 1}, run("PK.REPREPARE", "ns", "a", "w"))
	require.Equal(t, Reply{Kind: Int, Int: 1}, run("PK.MPREPARE", "2", "ns", "b", "v", "ns", "c", "v"))
	require.Zero(t, reads)
	require.Equal(t, Reply{Kind: Int, Int: 1}, run("PK.PREPARE", "ns", "d", "v", "PX", "60000"))
	require.Equal(t, 1, reads)
	require.Equal(t, Reply{Kind: Int, Int: 1}, run("PK.PREPARE", "ns", "e", "v", "PXAT", "1000000060000"))
	require.Equal(t, 2, reads)
}
