package disk

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestSweep checks that the sweep deletes exactly the records past their
// retention, from the records and from the index, and keeps the others.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		retention time.Duration
		ttl       time.Duration // of the records that become due
		advance   time.Duration // from their creation
		wantGone  bool
	}{
		{"within retention", time.Hour, 10 * time.Second, 10*time.Second + time.Hour - time.Millisecond, false},
		{"at retention", time.Hour, 10 * time.Second, 10*time.Second + time.Hour, true},
		{"zero retention at expiry", 0, 10 * time.Second, 10 * time.Second, true},
		{"zero retention before expiry", 0, 10 * time.Second, 10*time.Second - time.Millisecond, false},
		{"more than one chunk", time.Minute, time.Second, time.Second + time.Minute, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			s := openTest(t, t.TempDir(), clock, tc.retention)
			n := 3
			if tc.name == "more than one chunk" {
				n = 2*sweepChunk + 7
			}
			for i := range n {
				ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", fmt.Appendf(nil, "due-%d", i), []byte("v"), after(tc.ttl))
				require.NoError(t, err)
				require.True(t, ok)
			}
			// Kept whatever happens: forever, and a TTL far beyond.
			_, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("forever"), []byte("f"), forever())
			require.NoError(t, err)
			_, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("later"), []byte("l"), after(tc.ttl+tc.retention+time.Hour))
			require.NoError(t, err)
			// Made due, then given a later ttlAt: its old index entry must
			// not sweep it.
			_, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("extended"), []byte("e"), after(tc.ttl))
			require.NoError(t, err)
			ok, err := (backend.Calls{Runner: s}).Reprepare(ctx, "ns", []byte("extended"), []byte("e2"), backend.Cond{}, after(tc.ttl+tc.retention+time.Hour))
			require.NoError(t, err)
			require.True(t, ok)
			requireIndexMatches(t, s)

			clock.Advance(tc.advance)
			// Commands see a record past retention as absent before the sweep.
			_, ok, err = (backend.Calls{Runner: s}).Get(ctx, "ns", []byte("due-0"))
			require.NoError(t, err)
			require.Equal(t, !tc.wantGone, ok)

			deleted, err := s.sweep()
			require.NoError(t, err)
			wantDeleted, wantRecords := 0, n+3
			if tc.wantGone {
				wantDeleted, wantRecords = n, 3
			}
			require.Equal(t, wantDeleted, deleted)
			require.Len(t, keyspace(t, s, prefixRecord), wantRecords)
			require.Len(t, keyspace(t, s, prefixExpiry), wantRecords-1) // all but forever
			requireIndexMatches(t, s)
			for _, k := range []string{"forever", "later", "extended"} {
				_, ok, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte(k))
				require.NoError(t, err)
				require.True(t, ok, k)
			}

			again, err := s.sweep()
			require.NoError(t, err)
			require.Zero(t, again)
		})
	}
}

// TestSweepReplacedRecord checks that a record past its retention that is
// reserved again before the sweep keeps its new reservation: the old index
// entry goes with the replacement, and the new record is not swept.
func TestSweepReplacedRecord(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := openTest(t, t.TempDir(), clock, time.Minute)
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("k"), []byte("old"), after(time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	clock.Advance(time.Second + time.Minute)
	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("k"), []byte("new"), after(time.Hour))
	require.NoError(t, err)
	require.True(t, ok)
	requireIndexMatches(t, s)

	deleted, err := s.sweep()
	require.NoError(t, err)
	require.Zero(t, deleted)
	rec, ok, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte("k"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte("new"), rec.Value)
}

// TestSweepStaleEntry checks that an index entry without its record (which
// only a bug or a torn manual edit could leave) is removed.
func TestSweepStaleEntry(t *testing.T) {
	clock := newFakeClock()
	s := openTest(t, t.TempDir(), clock, 0)
	rk := recordKey("ns", []byte("ghost"))
	require.NoError(t, s.db.Set(expiryKey(clock.Now().UnixMilli()-1, rk), nil, nil))
	deleted, err := s.sweep()
	require.NoError(t, err)
	require.Zero(t, deleted)
	require.Empty(t, keyspace(t, s, prefixExpiry))
}

// TestSweepOneNotDue checks that an entry read as due whose record is not
// past its retention when re-checked under the lock (the clock went back in
// between) keeps both the record and the entry.
func TestSweepOneNotDue(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := openTest(t, t.TempDir(), clock, 0)
	_, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("k"), []byte("v"), after(time.Second))
	require.NoError(t, err)
	idx := keyspace(t, s, prefixExpiry)
	require.Len(t, idx, 1)
	gone, err := s.sweepOne(idx[0])
	require.NoError(t, err)
	require.False(t, gone)
	require.Len(t, keyspace(t, s, prefixRecord), 1)
	requireIndexMatches(t, s)
}

// TestSweepAfterRetentionChange checks that records written under one
// retention are swept by the retention of the store that reopens them.
func TestSweepAfterRetentionChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := newFakeClock()
	s, err := open(dir, backend.Options{Retention: 24 * time.Hour, Now: clock.Now}, config{})
	require.NoError(t, err)
	_, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("k"), []byte("v"), after(time.Second))
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = openTest(t, dir, clock, time.Minute)
	clock.Advance(time.Second + time.Minute)
	deleted, err := s.sweep()
	require.NoError(t, err)
	require.Equal(t, 1, deleted)
	require.Empty(t, keyspace(t, s, prefixRecord))
	require.Empty(t, keyspace(t, s, prefixExpiry))
}

// TestSweepLoop checks that Open starts the sweep in the background, at
// the period Tuning.SweepInterval sets. It polls for the loop's result;
// the expiry itself comes from the moved clock.
func TestSweepLoop(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s, err := OpenTuned(t.TempDir(), backend.Options{Now: clock.Now}, Tuning{SweepInterval: time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	_, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("k"), []byte("v"), after(time.Second))
	require.NoError(t, err)
	require.Len(t, keyspace(t, s, prefixRecord), 1)
	clock.Advance(time.Second)
	// keyspace's require must not run off the test goroutine: count here.
	records := func() int {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixRecord}, UpperBound: []byte{prefixRecord + 1}})
		if err != nil {
			return -1
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if it.Close() != nil {
			return -1
		}
		return n
	}
	require.Eventually(t, func() bool { return records() == 0 }, 5*time.Second, time.Millisecond)
	require.Empty(t, keyspace(t, s, prefixExpiry))
}
