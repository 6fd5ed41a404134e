package memory

import (
	"strings"
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

// TestMapKeyLen: one's choice of buffer (mapKeyLen) agrees with the key
// mapKey builds, across the namespace lengths where the varint grows.
func TestMapKeyLen(t *testing.T) {
	for _, nsLen := range []int{0, 1, 64, 127, 128, 300, 16384} {
		for _, keyLen := range []int{0, 1, 28, 29, 30, 1000} {
			ns, key := strings.Repeat("n", nsLen), make([]byte, keyLen)
			if got, want := mapKeyLen(ns, key), len(mapKey(nil, ns, key)); got != want {
				t.Errorf("mapKeyLen(%d, %d) = %d, want %d", nsLen, keyLen, got, want)
			}
		}
	}
}
