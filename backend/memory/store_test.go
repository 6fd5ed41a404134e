package memory

import (
	"testing"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		clock := newFakeClock()
		opts.Now = clock.Now
		s := New(opts)
		t.Cleanup(func() { _ = s.Close() })
		return storetest.Harness{Store: s, Now: clock.Now, Advance: clock.Advance}
	})
}
