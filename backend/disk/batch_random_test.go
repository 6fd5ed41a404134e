package disk

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestBatchAsOneAtATime runs the same random pipelines through Batch on one
// store and one op at a time through the single-command methods on another,
// on one clock that moves between pipelines (past expiries and retentions)
// with sweeps in between, and requires the same result for every op and
// the same bytes in both databases at the end.
func TestBatchAsOneAtATime(t *testing.T) {
	seeds := uint64(12)
	if testing.Short() {
		seeds = 3
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			clock := newFakeClock()
			const retention = 4 * time.Second
			batched := openTest(t, t.TempDir(), clock, retention)
			alone := openTest(t, t.TempDir(), clock, retention)
			ops := 0
			for round := range 40 {
				n := 1 + rng.IntN(24)
				if round%13 == 0 {
					n = batchChunk + rng.IntN(60) // spans two chunks
				}
				pipeline := randomOps(rng, n, clock.Now().UnixMilli())
				res := make([]backend.Result, n)
				batched.Run(ctx, pipeline, res, backend.Pipelined)
				want := runAlone(ctx, alone, pipeline)
				for i := range want {
					requireResults(t, want[i:i+1], res[i:i+1])
				}
				ops += n
				clock.Advance(time.Duration(rng.IntN(2500)) * time.Millisecond)
				if rng.IntN(3) == 0 {
					nb, err := batched.sweep()
					require.NoError(t, err)
					na, err := alone.sweep()
					require.NoError(t, err)
					require.Equal(t, na, nb, "swept after round %d", round)
				}
			}
			require.Equal(t, dump(t, alone), dump(t, batched))
			requireIndexMatches(t, batched)
			t.Logf("%d ops, %d records left", ops, len(keyspace(t, batched, prefixRecord)))
		})
	}
}

// randomOps returns n ops of every kind on few keys in two namespaces, with
// few values, so that ops keep meeting records of earlier ones, conditions
// hold about as often as not, and some Moves name one key twice.
func randomOps(rng *rand.Rand, n int, nowMs int64) []backend.Op {
	pick := func(s ...string) []byte { return []byte(s[rng.IntN(len(s))]) }
	key := func() []byte { return pick("a", "b", "c", "d", "e", "\x00") }
	value := func() []byte { return pick("", "v1", "v2") }
	exp := func(keep bool) backend.Expiry {
		switch rng.IntN(5) {
		case 0:
			return after(time.Duration(1+rng.IntN(4000)) * time.Millisecond)
		case 1:
			return at(nowMs - 500 + int64(rng.IntN(4000))) // sometimes in the past
		case 2:
			if keep {
				return keepTTL()
			}
		}
		return forever()
	}
	cond := func() backend.Cond {
		if rng.IntN(2) == 0 {
			return backend.Cond{}
		}
		return backend.IfEq(value())
	}
	ops := make([]backend.Op, n)
	for i := range ops {
		op := backend.Op{NS: string(pick("ns", "ns2")), Key: key()}
		switch rng.IntN(5) {
		case 0:
			op.Kind, op.Value, op.Exp = backend.OpPrepare, value(), exp(false)
		case 1:
			op.Kind = backend.OpGet
		case 2:
			op.Kind, op.Cond = backend.OpRollback, cond()
		case 3:
			op.Kind, op.Value, op.Cond, op.Exp = backend.OpReprepare, value(), cond(), exp(true)
		default:
			op.Kind, op.Value, op.OldKey, op.OldValue, op.Exp = backend.OpMove, value(), key(), value(), exp(false)
		}
		ops[i] = op
	}
	return ops
}

// dump returns every record and expiry index entry of s as text.
func dump(t *testing.T, s *Store) []string {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixRecord}, UpperBound: []byte{prefixExpiry + 1}})
	require.NoError(t, err)
	var kvs []string
	for ok := it.First(); ok; ok = it.Next() {
		kvs = append(kvs, fmt.Sprintf("%q=%q", it.Key(), it.Value()))
	}
	require.NoError(t, it.Close())
	return kvs
}
