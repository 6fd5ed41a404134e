package disk

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
				ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", key, v, forever())
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
		rec, ok, err := (backend.Calls{Runner: s}).Get(ctx, "ns", key)
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
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", a, v, forever())
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
				r, err := (backend.Calls{Runner: s}).Move(ctx, "ns", to, v, from, v, forever())
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
	_, okA, err := (backend.Calls{Runner: s}).Get(ctx, "ns", a)
	require.NoError(t, err)
	_, okB, err := (backend.Calls{Runner: s}).Get(ctx, "ns", b)
	require.NoError(t, err)
	require.NotEqual(t, okA, okB, "exactly one of a and b is reserved")
	require.Equal(t, okB, moved.Load()%2 == 1, "moves: %d", moved.Load())
	require.Len(t, keyspace(t, s, prefixRecord), 1)
}

// TestRaceBatchOneWinner races 32 clients reserving the same 8 keys per
// round, each in its own random order with GETs in between: most hand
// their commands to Batch, one in four runs them one at a time. Batches
// lock overlapping stripe sets, so a wrong lock order would deadlock. Each
// key has exactly one winner, whose value it holds, and a client's GET
// after its own winning PREPARE sees its value.
func TestRaceBatchOneWinner(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), newFakeClock(), time.Hour)
	const clients, keys, rounds = 32, 8, 20
	for round := range rounds {
		var winners [keys]atomic.Int32 // client+1 of each key's winner
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for c := range clients {
			rng := rand.New(rand.NewPCG(uint64(round), uint64(c)))
			order := rng.Perm(keys)
			var ops []backend.Op
			for _, k := range order {
				key := fmt.Sprintf("r%d:%d", round, k)
				ops = append(ops, opPrepare(key, fmt.Sprint(c), forever()), opGet(key))
			}
			wg.Go(func() {
				<-start
				var res []backend.Result
				if c%4 == 0 {
					res = runAlone(ctx, s, ops)
				} else {
					res = make([]backend.Result, len(ops))
					s.Run(ctx, ops, res, backend.Pipelined)
				}
				for i, k := range order {
					prep, get := res[2*i], res[2*i+1]
					if prep.Err != nil || get.Err != nil {
						t.Error(prep.Err, get.Err)
						return
					}
					if !prep.OK {
						continue
					}
					wins.Add(1)
					if !winners[k].CompareAndSwap(0, int32(c+1)) {
						t.Errorf("round %d key %d: clients %d and %d both won", round, k, winners[k].Load()-1, c)
					}
					if string(get.Record.Value) != fmt.Sprint(c) {
						t.Errorf("round %d key %d: client %d won but read %q", round, k, c, get.Record.Value)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, int32(keys), wins.Load(), "round %d", round)
		for k := range keys {
			rec, ok, err := (backend.Calls{Runner: s}).Get(ctx, "ns", fmt.Appendf(nil, "r%d:%d", round, k))
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, fmt.Sprint(winners[k].Load()-1), string(rec.Value), "round %d key %d", round, k)
		}
	}
	require.Len(t, keyspace(t, s, prefixRecord), keys*rounds)
}

// TestRaceBatchMoves races key changes a->b and b->a in batches (with
// reservations of other keys, so that the batches' stripe sets overlap in
// every order) against single Moves the other way: nothing deadlocks, and
// the one reservation is never lost nor doubled.
func TestRaceBatchMoves(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir(), newFakeClock(), time.Hour)
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("a"), []byte("v"), forever())
	require.NoError(t, err)
	require.True(t, ok)

	var moved atomic.Int32
	var wg sync.WaitGroup
	for c := range 32 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 0))
			for i := range 20 {
				from, to := "a", "b"
				if rng.IntN(2) == 0 {
					from, to = to, from
				}
				if c%4 == 0 {
					r, err := (backend.Calls{Runner: s}).Move(ctx, "ns", []byte(to), []byte("v"), []byte(from), []byte("v"), forever())
					if err != nil {
						t.Error(err)
						return
					}
					if r == backend.Moved {
						moved.Add(1)
					}
					continue
				}
				own := fmt.Sprintf("c%d:%d", c, i)
				other := fmt.Sprintf("x%d", rng.IntN(8)) // shared with other clients
				ops := []backend.Op{
					opPrepare(own, "o", forever()), opGet(other),
					opMove(to, "v", from, "v", forever()), opMove(from, "v", to, "v", forever()),
					opPrepare(other, "o", forever()), opRollback(other, backend.Cond{}), opRollback(own, ifeq("o")),
				}
				rng.Shuffle(2, func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
				res := make([]backend.Result, len(ops))
				s.Run(ctx, ops, res, backend.Pipelined)
				for _, r := range res {
					if r.Err != nil {
						t.Error(r.Err)
						return
					}
					if r.Move == backend.Moved {
						moved.Add(1)
					}
				}
				if !res[5].OK || !res[6].OK {
					t.Errorf("rollbacks in the batch failed: %+v", res)
				}
			}
		})
	}
	wg.Wait()
	_, okA, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte("a"))
	require.NoError(t, err)
	_, okB, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte("b"))
	require.NoError(t, err)
	require.NotEqual(t, okA, okB, "exactly one of a and b is reserved")
	require.Equal(t, okB, moved.Load()%2 == 1, "moves: %d", moved.Load())
	require.Len(t, keyspace(t, s, prefixRecord), 1)
}

// TestRaceBatchClose checks that batches racing Close either finish or fail
// with ErrClosed on every op, and never touch the closed database.
func TestRaceBatchClose(t *testing.T) {
	ctx := context.Background()
	s, err := open(t.TempDir(), backend.Options{Now: newFakeClock().Now}, config{})
	require.NoError(t, err)
	var wg, started sync.WaitGroup
	for c := range 8 {
		started.Add(1)
		wg.Go(func() {
			for i := 0; ; i++ {
				ops := []backend.Op{
					opPrepare(fmt.Sprintf("%d:%d", c, i), "v", forever()), opGet(fmt.Sprintf("%d:%d", c, i)),
					opRollback(fmt.Sprintf("%d:%d", c, i-1), backend.Cond{}),
				}
				res := make([]backend.Result, len(ops))
				s.Run(ctx, ops, res, backend.Pipelined)
				if res[0].Err != nil {
					for j, r := range res {
						if !errors.Is(r.Err, ErrClosed) {
							t.Errorf("op %d: %+v, want ErrClosed", j, r)
						}
					}
					return
				}
				if i == 10 {
					started.Done()
				}
			}
		})
	}
	started.Wait()
	require.NoError(t, s.Close())
	wg.Wait()
}
