package disk

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
)

// TestConformance runs the contract suite on a store with a moved clock and
// a fast background sweep, so the sweep races the suite's commands.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		clock := newFakeClock()
		opts.Now = clock.Now
		s, err := open(t.TempDir(), opts, config{sweepInterval: time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return storetest.Harness{Store: s, Now: clock.Now, Advance: clock.Advance}
	})
}
