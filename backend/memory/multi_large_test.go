package memory

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestMPrepareLargeValues: an MPREPARE whose values pass prebuildAt has its
// records built before its shards are locked (buildEntries); it stores,
// replaces an expired record, sets the ttl and refuses as the small one
// does.
func TestMPrepareLargeValues(t *testing.T) {
	clock := newFakeClock()
	s := New(backend.Options{Now: clock.Now})
	t.Cleanup(func() { _ = s.Close() })
	c := context.Background()
	big := func(b byte) []byte { return bytes.Repeat([]byte{b}, prebuildAt/2+1) }

	// b holds an expired record: the MPREPARE replaces it.
	ok, err := (backend.Calls{Runner: s}).Prepare(c, "ns", []byte("b"), []byte("old"), backend.Expiry{Kind: backend.ExpireAfter, Millis: 1000})
	require.NoError(t, err)
	require.True(t, ok)
	clock.Advance(2 * time.Second)
	entries := []backend.Entry{{NS: "ns", Key: []byte("a"), Value: big('a')}, {NS: "ns", Key: []byte("b"), Value: big('b')}}
	ok, err = (backend.Calls{Runner: s}).MPrepare(c, entries, backend.Expiry{Kind: backend.ExpireAfter, Millis: 5000})
	require.NoError(t, err)
	require.True(t, ok)
	for _, e := range entries {
		rec, found, err := (backend.Calls{Runner: s}).Get(c, "ns", e.Key)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, e.Value, rec.Value)
		require.Equal(t, clock.Now().UnixMilli()+5000, rec.TTLAt)
	}
	// Live now: refused, nothing changed.
	ok, err = (backend.Calls{Runner: s}).MPrepare(c, []backend.Entry{{NS: "ns", Key: []byte("c"), Value: big('c')}, entries[0]}, backend.Expiry{})
	require.NoError(t, err)
	require.False(t, ok)
	_, found, err := (backend.Calls{Runner: s}).Get(c, "ns", []byte("c"))
	require.NoError(t, err)
	require.False(t, found)
	// Expired, they are gone from the heap as from the table.
	clock.Advance(6 * time.Second)
	_, found, err = (backend.Calls{Runner: s}).Get(c, "ns", []byte("a"))
	require.NoError(t, err)
	require.False(t, found)
}
