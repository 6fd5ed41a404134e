package disk

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestMetrics: the store's collector shows the records its sweep deleted,
// its disk usage and its WAL fsyncs.
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := openTest(t, t.TempDir(), clock, time.Minute)
	for i := range 5 {
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", fmt.Appendf(nil, "k%d", i), []byte("v"), after(time.Second))
		require.NoError(t, err)
		require.True(t, ok)
	}
	_, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("kept"), []byte("v"), forever())
	require.NoError(t, err)
	clock.Advance(time.Second + time.Minute)
	n, err := s.sweep()
	require.NoError(t, err)
	require.Equal(t, 5, n)

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(s))
	fams, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	var fsyncs uint64
	for _, f := range fams {
		m := f.GetMetric()[0]
		switch {
		case m.Counter != nil:
			got[f.GetName()] = m.Counter.GetValue()
		case m.Gauge != nil:
			got[f.GetName()] = m.Gauge.GetValue()
		case m.Histogram != nil:
			fsyncs = m.Histogram.GetSampleCount()
		}
	}
	require.Equal(t, 5.0, got["prepkey_expired_swept_total"])
	require.Greater(t, got["prepkey_pebble_disk_usage_bytes"], 0.0)
	require.GreaterOrEqual(t, fsyncs, uint64(6), "every acknowledged write was synced")
	require.Equal(t, 3, testutil.CollectAndCount(s))
}
