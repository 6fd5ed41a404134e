package disk

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestRacePrepareOneKey races 64 goroutines preparing one key: exactly one
// wins, and the record holds the winner's value. Pebble shows a write before
// its fsync, so the window between a read and the next write is narrow:
// the race is run over many keys to hit it.
func TestRacePrepareOneKey(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), newFakeClock(), time.Hour)
	const goroutines, rounds = 64, 50
	for round := range rounds {
		key := fmt.Appendf(nil, "k%d", round)
		var wins atomic.Int32
		var winner atomic.Value
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range goroutines {
			wg.Go(func() {
				<-start
				v := []byte{byte(g)}
				ok, err := s.Prepare(ctx, "ns", key, v, forever())
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					wins.Add(1)
					winner.Store(v)
				}
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, int32(1), wins.Load(), "round %d", round)
		rec, ok, err := s.Get(ctx, "ns", key)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, winner.Load(), rec.Value)
	}
}

// TestRaceMoveBothWays races key changes a->b and b->a: the stripe locks
// are taken in one order, so none deadlocks, and the one reservation is
// never lost nor doubled.
func TestRaceMoveBothWays(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), newFakeClock(), time.Hour)
	a, b, v := []byte("a"), []byte("b"), []byte("v")
	ok, err := s.Prepare(ctx, "ns", a, v, forever())
	require.NoError(t, err)
	require.True(t, ok)

	var moved atomic.Int32
	var wg sync.WaitGroup
	for g := range 32 {
		from, to := a, b
		if g%2 == 1 {
			from, to = b, a
		}
		wg.Go(func() {
			for range 20 {
				r, err := s.Move(ctx, "ns", to, v, from, v, forever())
				if err != nil {
					t.Error(err)
					return
				}
				if r == backend.Moved {
					moved.Add(1)
				}
			}
		})
	}
	wg.Wait()
	_, okA, err := s.Get(ctx, "ns", a)
	require.NoError(t, err)
	_, okB, err := s.Get(ctx, "ns", b)
	require.NoError(t, err)
	require.NotEqual(t, okA, okB, "exactly one of a and b is reserved")
	require.Equal(t, okB, moved.Load()%2 == 1, "moves: %d", moved.Load())
	require.Len(t, keyspace(t, s, prefixRecord), 1)
}
