package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// newTestStore returns a store on a fake clock whose background sweeper
// does not run during the test, so that tests call sweep themselves.
func newTestStore(t *testing.T, retention time.Duration) (*Store, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	s := newStore(backend.Options{Retention: retention, Now: clock.Now}, time.Hour)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, clock
}

// records counts the records held, deleted or not by a call yet.
func records(s *Store) int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.recs.Len()
		sh.mu.Unlock()
	}
	return n
}

// requireIndexed checks each shard's expiry index against its records:
// every record that can expire is in the heap at the index it knows, no
// other is, and the heap is ordered.
func requireIndexed(t *testing.T, s *Store) {
	t.Helper()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		expiring := 0
		for _, en := range sh.recs.Items() {
			if en.ttlAt == backend.Forever {
				require.Equal(t, int32(-1), en.index, "forever record in the heap")
				continue
			}
			expiring++
			require.GreaterOrEqual(t, en.index, int32(0), "expiring record not in the heap")
			require.Same(t, en, sh.exp[en.index].en)
			require.Equal(t, en.ttlAt, sh.exp[en.index].ttlAt, "heap slot's ttlAt")
		}
		require.Len(t, sh.exp, expiring, "shard %d heap holds records no longer there", i)
		for j := 1; j < len(sh.exp); j++ {
			require.LessOrEqual(t, sh.exp[(j-1)/2].ttlAt, sh.exp[j].ttlAt, "shard %d heap order", i)
		}
		sh.mu.Unlock()
	}
}

// heaped counts the shards whose expiry heap is not empty: the sweep peeks
// once at each of them without deleting.
func heaped(s *Store) int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if len(sh.exp) > 0 {
			n++
		}
		sh.mu.Unlock()
	}
	return n
}

func TestSweepVisitsOnlyWhatItDeletes(t *testing.T) {
	const retention = time.Hour
	s, clock := newTestStore(t, retention)
	ctx := context.Background()
	const n = 1000
	kinds := map[string]backend.Expiry{
		"forever": {},
		"short":   {Kind: backend.ExpireAfter, Millis: 10_000},
		"long":    {Kind: backend.ExpireAfter, Millis: 3 * 3600_000},
	}
	for i := range n {
		for prefix, exp := range kinds {
			ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", fmt.Appendf(nil, "%s-%d", prefix, i), []byte("v"), exp)
			require.NoError(t, err)
			require.True(t, ok)
		}
	}
	requireIndexed(t, s)

	clock.Advance(10*time.Second + retention - time.Millisecond)
	require.Equal(t, heaped(s), s.sweep(), "a sweep with nothing to delete peeks once per shard")
	require.Equal(t, 3*n, records(s), "records still retained were deleted")

	clock.Advance(time.Millisecond)
	visited := s.sweep()
	require.Equal(t, 2*n, records(s), "records left after the sweep")
	require.Equal(t, n+heaped(s), visited, "the sweep looked at records it did not delete")
	requireIndexed(t, s)
	for i := range n {
		for prefix := range kinds {
			_, ok, err := (backend.Calls{Runner: s}).Get(ctx, "ns", fmt.Appendf(nil, "%s-%d", prefix, i))
			require.NoError(t, err)
			require.Equal(t, prefix != "short", ok, "%s-%d", prefix, i)
		}
	}
}

// TestSweepMassExpiry expires more records in one shard than one lock hold
// deletes, so the sweep has to come back to that shard.
func TestSweepMassExpiry(t *testing.T) {
	s, clock := newTestStore(t, 0)
	ctx := context.Background()
	n := 3*sweepBatch + 1
	exp := backend.Expiry{Kind: backend.ExpireAfter, Millis: 1}
	var buf [64]byte
	for i, placed := 0, 0; placed < n; i++ {
		key := fmt.Appendf(nil, "k%d", i)
		if s.key(mapKey(buf[:], "ns", key)).shard() != 0 {
			continue
		}
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", key, nil, exp)
		require.NoError(t, err)
		require.True(t, ok)
		placed++
	}
	require.Equal(t, n, s.shards[0].recs.Len())
	clock.Advance(time.Millisecond)
	require.Equal(t, n, s.sweep())
	require.Equal(t, 0, records(s))
	requireIndexed(t, s)
}

// TestSweeperRuns checks that the background sweeper deletes records by
// itself once they are past retention.
func TestSweeperRuns(t *testing.T) {
	clock := newFakeClock()
	s := newStore(backend.Options{Retention: time.Minute, Now: clock.Now}, time.Millisecond)
	ctx := context.Background()
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("k"), []byte("v"), backend.Expiry{Kind: backend.ExpireAfter, Millis: 1000})
	require.NoError(t, err)
	require.True(t, ok)
	clock.Advance(time.Second + time.Minute)
	require.Eventually(t, func() bool { return records(s) == 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "second Close")
}

// TestIndexUnderRandomCalls makes random calls on a few keys with random
// expiries while the clock moves, and checks after each that the expiry
// index matches the records, and at the end that a sweep leaves exactly the
// records still retained.
func TestIndexUnderRandomCalls(t *testing.T) {
	const retention = 5 * time.Second
	s, clock := newTestStore(t, retention)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return fmt.Appendf(nil, "k%d", rng.IntN(40)) }
	value := func() []byte { return []byte{byte('a' + rng.IntN(3))} }
	expiry := func() backend.Expiry {
		switch rng.IntN(3) {
		case 0:
			return backend.Expiry{}
		case 1:
			return backend.Expiry{Kind: backend.ExpireAfter, Millis: rng.Int64N(10_000) + 1}
		default:
			return backend.Expiry{Kind: backend.ExpireAt, Millis: clock.Now().UnixMilli() + rng.Int64N(10_000) + 1}
		}
	}
	cond := func() backend.Cond {
		if rng.IntN(2) == 0 {
			return backend.Cond{}
		}
		return backend.IfEq(value())
	}
	for range 20_000 {
		var err error
		switch rng.IntN(5) {
		case 0:
			_, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", key(), value(), expiry())
		case 1:
			_, err = (backend.Calls{Runner: s}).Rollback(ctx, "ns", key(), cond())
		case 2:
			exp := expiry()
			if rng.IntN(4) == 0 {
				exp = backend.Expiry{Kind: backend.KeepTTL}
			}
			_, err = (backend.Calls{Runner: s}).Reprepare(ctx, "ns", key(), value(), cond(), exp)
		case 3:
			newKey, oldKey := key(), key()
			if string(newKey) != string(oldKey) {
				_, err = (backend.Calls{Runner: s}).Move(ctx, "ns", newKey, value(), oldKey, value(), expiry())
			}
		case 4:
			_, _, err = (backend.Calls{Runner: s}).Get(ctx, "ns", key())
		}
		require.NoError(t, err)
		clock.Advance(time.Duration(rng.IntN(5)) * time.Millisecond)
		if rng.IntN(100) == 0 {
			requireIndexed(t, s)
		}
		if rng.IntN(1000) == 0 {
			s.sweep()
		}
	}
	requireIndexed(t, s)
	s.sweep()
	nowMs := clock.Now().UnixMilli()
	for i := range s.shards {
		for _, en := range s.shards[i].recs.Items() {
			require.False(t, s.opts.Gone(en.ttlAt, nowMs), "record past retention left by the sweep")
		}
	}
}
