package disk

import (
	"bytes"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
)

type fakeClock = storetest.Clock

func newFakeClock() *fakeClock { return storetest.NewClock(time.UnixMilli(1_700_000_000_000)) }

// openTest opens a store in dir on clock with no background sweep, and
// closes it when the test ends.
func openTest(t *testing.T, dir string, clock *fakeClock, retention time.Duration) *Store {
	t.Helper()
	s, err := open(dir, backend.Options{Retention: retention, Now: clock.Now}, config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// keyspace returns every pebble key under prefix, in order.
func keyspace(t *testing.T, s *Store, prefix byte) [][]byte {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefix}, UpperBound: []byte{prefix + 1}})
	require.NoError(t, err)
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
	}
	require.NoError(t, it.Close())
	return keys
}

// requireIndexMatches checks the expiry index invariant: exactly one entry
// per record that can expire, at its ttlAt, and nothing else.
func requireIndexMatches(t *testing.T, s *Store) {
	t.Helper()
	var want [][]byte
	for _, rk := range keyspace(t, s, prefixRecord) {
		r, err := s.read(rk)
		require.NoError(t, err)
		require.True(t, r.exists)
		if r.ttlAt != backend.Forever {
			want = append(want, expiryKey(r.ttlAt, rk))
		}
	}
	got := keyspace(t, s, prefixExpiry)
	// Index keys sort by ttlAt, record keys by key: compare as sets.
	require.ElementsMatch(t, want, got)
}
