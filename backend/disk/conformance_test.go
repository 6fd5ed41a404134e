package disk

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
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
		// The gate holds the WAL's fsyncs for the suite's deadline row
		// (Hold): a hung disk.
		gate := newWALSyncGate()
		s, err := open(t.TempDir(), opts, config{sweepInterval: time.Millisecond, fs: errorfs.Wrap(vfs.Default, gate)})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		t.Cleanup(gate.open) // runs first: Close must not wait on a held fsync
		hold := func() func() {
			gate.arm()
			return gate.open
		}
		return storetest.Harness{Store: s, Now: clock.Now, Advance: clock.Advance, Hold: hold}
	})
}
