package disk

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

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
			if r := s.RunOne(ctx, backend.Op{Kind: backend.OpPrepare, NS: "ns", Key: key, Value: []byte("v")}); r.Err != nil {
				b.Error(r.Err)
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
		if r := s.RunOne(ctx, backend.Op{Kind: backend.OpPrepare, NS: "ns", Key: fmt.Appendf(nil, "k:%d", i), Value: []byte("v")}); r.Err != nil {
			b.Fatal(r.Err)
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
			if r := s.RunOne(ctx, backend.Op{Kind: backend.OpGet, NS: "ns", Key: fmt.Appendf(nil, "k:%d", rand.IntN(keys+keys/10))}); r.Err != nil {
				b.Error(r.Err)
				return
			}
		}
	})
	reportOps(b)
}

// BenchmarkPreparePipelined is PK.PREPARE of random keys from ~50 clients
// that pipeline depth commands each (redis-benchmark -P depth): "single"
// runs each alone (RunOne) with its own commit, as a store without
// batches would (pebble's group commit still shares fsyncs between clients);
// "batch" hands each client's depth commands to one Run, one commit for all.
func BenchmarkPreparePipelined(b *testing.B) {
	for _, tc := range []struct {
		name  string
		depth int
		batch bool
	}{
		{"single", 1, false},
		{"batch/depth=4", 4, true},
		{"batch/depth=16", 16, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			setClients(b, clients)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ops := make([]backend.Op, 0, tc.depth)
				res := make([]backend.Result, tc.depth)
				flush := func() bool {
					if tc.batch {
						s.Run(ctx, ops, res, backend.Pipelined)
					} else {
						for i, op := range ops {
							res[i] = s.RunOne(ctx, op)
						}
					}
					for _, r := range res[:len(ops)] {
						if r.Err != nil {
							b.Error(r.Err)
							return false
						}
					}
					ops = ops[:0]
					return true
				}
				for pb.Next() {
					ops = append(ops, backend.Op{Kind: backend.OpPrepare, NS: "ns",
						Key: fmt.Appendf(nil, "k:%d", rand.IntN(1_000_000)), Value: []byte("v")})
					if len(ops) == tc.depth && !flush() {
						return
					}
				}
				if len(ops) > 0 {
					flush()
				}
			})
			reportOps(b)
		})
	}
}

// signUp is a block of two reservations (a username and an email), the
// shape of a transaction a client sends: MULTI, PK.PREPARE ×2, EXEC.
func signUp() []backend.Op {
	n := rand.IntN(1_000_000)
	return []backend.Op{
		{Kind: backend.OpPrepare, NS: "username", Key: fmt.Appendf(nil, "u:%d", n), Value: []byte("v")},
		{Kind: backend.OpPrepare, NS: "email", Key: fmt.Appendf(nil, "e:%d", n), Value: []byte("v")},
	}
}

// BenchmarkSignUpExec runs sign-ups as transactions (Run, Isolated) from
// ~50 clients; BenchmarkSignUpBatch runs the same two commands as a
// pipeline (Run, Pipelined: each atomic alone). Side by side they give the cost of
// isolation. A block counts as one op.
func BenchmarkSignUpExec(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	setClients(b, clients)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		res := make([]backend.Result, 2)
		for pb.Next() {
			if err := s.Run(ctx, signUp(), res, backend.Isolated); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportOps(b)
}

func BenchmarkSignUpBatch(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	setClients(b, clients)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		res := make([]backend.Result, 2)
		for pb.Next() {
			s.Run(ctx, signUp(), res, backend.Pipelined)
			if res[0].Err != nil {
				b.Error(res[0].Err)
				return
			}
		}
	})
	reportOps(b)
}
