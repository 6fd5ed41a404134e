package disk

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// clients is the concurrency of the target: redis-benchmark -c 50.
const clients = 50

// benchStore opens a store on real time in a temporary directory on the
// same disk as the sidecar's data (t.TempDir is not a tmpfs here; an fsync
// on tmpfs would cost nothing and flatter every figure).
func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(b.TempDir(), backend.Options{Retention: 24 * time.Hour})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, s.Close()) })
	return s
}

// setClients makes RunParallel run about n goroutines.
func setClients(b *testing.B, n int) {
	b.SetParallelism(max(1, n/runtime.GOMAXPROCS(0)))
}

func reportOps(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkPrepareParallel is PK.PREPARE ns k:<random> v from ~50 clients,
// each waiting for its fsync: the shape of redis-benchmark -c 50 -P 1
// -r 1000000 against the sidecar on file:.
func BenchmarkPrepareParallel(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	setClients(b, clients)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Appendf(nil, "k:%d", rand.IntN(1_000_000))
			if _, err := s.Prepare(ctx, "ns", key, []byte("v"), backend.Expiry{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportOps(b)
}

// BenchmarkPrepareSerial is one client: every reservation pays a whole
// fsync, with nobody to share it.
func BenchmarkPrepareSerial(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Prepare(ctx, "ns", fmt.Appendf(nil, "k:%d", i), []byte("v"), backend.Expiry{}); err != nil {
			b.Fatal(err)
		}
	}
	reportOps(b)
}

// BenchmarkGetParallel is PK.GET of random, mostly present keys from ~50
// clients: no fsync, only the stripe and a pebble read.
func BenchmarkGetParallel(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	const keys = 10_000
	batch := s.db.NewBatch()
	for i := range keys {
		require.NoError(b, put(batch, recordKey("ns", fmt.Appendf(nil, "k:%d", i)), stored{}, backend.Forever, []byte("v")))
	}
	require.NoError(b, s.commit(batch))
	setClients(b, clients)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := s.Get(ctx, "ns", fmt.Appendf(nil, "k:%d", rand.IntN(keys+keys/10))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportOps(b)
}

// BenchmarkPreparePipelined measures what pipelined commands would gain if
// a connection's buffered commands went to the store together: ~50 clients
// each hand over 16 reservations at a time (redis-benchmark -P 16), which
// prepareMany commits as one batch with one fsync. The Store interface has
// no such call yet; this is the experiment behind the proposal in the
// report.
func BenchmarkPreparePipelined(b *testing.B) {
	for _, depth := range []int{1, 16} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			setClients(b, clients)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				keys := make([][]byte, 0, depth)
				flush := func() bool {
					_, err := s.prepareMany(ctx, "ns", keys, []byte("v"), backend.Expiry{})
					keys = keys[:0]
					if err != nil {
						b.Error(err)
					}
					return err == nil
				}
				for pb.Next() {
					keys = append(keys, fmt.Appendf(nil, "k:%d", rand.IntN(1_000_000)))
					if len(keys) == depth && !flush() {
						return
					}
				}
				if len(keys) > 0 {
					flush()
				}
			})
			reportOps(b)
		})
	}
}

// prepareMany is Prepare of several keys (one connection's pipeline) as one
// atomic batch with one fsync. It locks every stripe involved, in index
// order so that two callers cannot deadlock, and reads through an indexed
// batch so that a later command of the pipeline sees an earlier one.
func (s *Store) prepareMany(ctx context.Context, ns string, keys [][]byte, value []byte, exp backend.Expiry) ([]bool, error) {
	rks := make([][]byte, len(keys))
	idx := make([]int, 0, len(keys))
	for i, k := range keys {
		rks[i] = recordKey(ns, k)
		idx = append(idx, s.stripe(rks[i]))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.locks[i].Lock()
	}
	defer func() {
		for _, i := range idx {
			s.locks[i].Unlock()
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	batch := s.db.NewIndexedBatch()
	now := s.nowMs()
	res := make([]bool, len(keys))
	for i, rk := range rks {
		old, err := readFrom(batch, rk)
		if err != nil {
			batch.Close()
			return nil, err
		}
		if s.live(old, now) {
			continue
		}
		if err := put(batch, rk, old, exp.TTLAt(now, backend.Forever), value); err != nil {
			batch.Close()
			return nil, err
		}
		res[i] = true
	}
	return res, s.commit(batch)
}

// readFrom is read through an indexed batch.
func readFrom(b *pebble.Batch, rk []byte) (stored, error) {
	raw, closer, err := b.Get(rk)
	if err == pebble.ErrNotFound {
		return stored{}, nil
	}
	if err != nil {
		return stored{}, err
	}
	defer closer.Close()
	ttlAt, value, err := decodeRecord(raw)
	if err != nil {
		return stored{}, err
	}
	return stored{exists: true, ttlAt: ttlAt, value: slices.Clone(value)}, nil
}
