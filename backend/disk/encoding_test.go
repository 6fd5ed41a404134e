package disk

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecordKeyInjective checks that distinct (namespace, key) pairs whose
// concatenations collide get distinct record keys.
func TestRecordKeyInjective(t *testing.T) {
	pairs := []struct {
		ns  string
		key string
	}{
		{"a", "bc"}, {"ab", "c"}, {"abc", "\x00"}, {"a", "\x02bc"}, {"a\x01", "bc"},
	}
	seen := map[string]int{}
	for i, p := range pairs {
		k := string(recordKey(p.ns, []byte(p.key)))
		j, dup := seen[k]
		require.False(t, dup, "pairs %d and %d share a record key", i, j)
		seen[k] = i
	}
}

func TestRecordValueRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		ttlAt int64
		value []byte
	}{
		{0, nil}, {0, []byte{}}, {1_700_000_000_000, []byte("\x00\r\n\xff")}, {1<<62 + 5, bytes.Repeat([]byte("v"), 65536)},
	} {
		ttlAt, value, err := decodeRecord(recordValue(tc.ttlAt, tc.value))
		require.NoError(t, err)
		require.Equal(t, tc.ttlAt, ttlAt)
		require.Equal(t, len(tc.value), len(value))
		require.True(t, bytes.Equal(tc.value, value))
	}
	_, _, err := decodeRecord([]byte{1, 2, 3, 4, 5, 6, 7})
	require.ErrorIs(t, err, errCorrupt)
}

// TestExpiryKeyOrder checks that the index sorts by ttlAt first, which the
// sweep's range scan relies on, and round-trips.
func TestExpiryKeyOrder(t *testing.T) {
	early := expiryKey(1_000, recordKey("zz", []byte("\xff\xff")))
	late := expiryKey(1_001, recordKey("a", []byte("a")))
	require.Negative(t, bytes.Compare(early, late))
	require.Negative(t, bytes.Compare(early, expiryBound(1_001)))
	require.Negative(t, bytes.Compare(expiryBound(1_001), late))

	rk := recordKey("ns", []byte("k"))
	ttlAt, got, err := decodeExpiryKey(expiryKey(42, rk))
	require.NoError(t, err)
	require.Equal(t, int64(42), ttlAt)
	require.Equal(t, rk, got)
	_, _, err = decodeExpiryKey(expiryBound(42))
	require.ErrorIs(t, err, errCorrupt)
}
