package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/disk"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/backend/storetest"
)

// The variants the backends' own tests run the store-level suite on
// besides their plain one (backend/memory/realclock_test.go,
// backend/redis/cluster_test.go, backend/disk/conformance_test.go), run here
// through the server too.

// TestConformanceRealClock runs the cases on memory: with no movable
// clock, sleeping instead of moving one as they do against a real server,
// so that the cases' own real-time path is tested on a store that needs
// no server.
func TestConformanceRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps through every expiry")
	}
	run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		s := memory.New(opts)
		t.Cleanup(func() { _ = s.Close() })
		return storetest.Harness{Store: s}
	})
}

// TestConformanceComposedMove runs the cases on miniredis opened as a
// Cluster (redis+cluster://; miniredis answers CLUSTER SLOTS as one node
// holding every slot), so that, as in backend/redis's test of that name,
// every command whose keys fall in two slots takes the composed path: a
// key change or MPREPARE composed of scripts with compensation, and a
// block across slots answered with -EXECABORT (Isolates), which the
// Transactions cases require: a store that did not compose would fail them.
func TestConformanceComposedMove(t *testing.T) {
	if testing.Short() {
		t.Skip("the cases again, on the composed key change (make test runs it)")
	}
	run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		f := startFake(t)
		s := openRedis(t, "redis+cluster://"+f.Addr(), opts, false)
		return storetest.Harness{Store: s, Now: f.clock, Advance: f.advance, Isolates: oneSlot("")}
	})
}

// TestConformanceFileFastSweep runs the cases on file: with a moved clock
// and the background sweep every millisecond, as backend/disk's
// TestConformance does, so that the sweep races the commands the server
// sends.
func TestConformanceFileFastSweep(t *testing.T) {
	run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		clock := newClock()
		opts.Now = clock.Now
		s, err := disk.OpenTuned(t.TempDir(), opts, disk.Tuning{SweepInterval: time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return storetest.Harness{Store: s, Now: clock.Now, Advance: clock.Advance}
	})
}
