package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestSweptMetric: the collector counts the records the sweep deleted.
func TestSweptMetric(t *testing.T) {
	s, clock := newTestStore(t, time.Minute)
	for i := range 4 {
		ok, err := (backend.Calls{Runner: s}).Prepare(context.Background(), "ns", fmt.Appendf(nil, "k%d", i), []byte("v"),
			backend.Expiry{Kind: backend.ExpireAfter, Millis: 1000})
		require.NoError(t, err)
		require.True(t, ok)
	}
	clock.Advance(time.Second + time.Minute)
	s.sweep()
	require.Equal(t, 4.0, testutil.ToFloat64(s))
}
