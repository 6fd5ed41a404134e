package memory

import (
	"testing"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
)

// TestConformanceRealClock runs the suite the way it runs against a real
// server, sleeping instead of moving a clock, so that the suite's own
// real-time path is tested too.
func TestConformanceRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps for about half a minute")
	}
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		s := New(opts)
		t.Cleanup(func() { _ = s.Close() })
		return storetest.Harness{Store: s}
	})
}
