package mongo

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/prepkey/prepkey/backend"
)

// The benchmarks measure the store alone, one round trip per operation, on
// whatever server the tests use (FerretDB's figures say little about
// MongoDB's).

func BenchmarkPrepare(b *testing.B) {
	s := openBench(b)
	ctx := b.Context()
	var n int
	for b.Loop() {
		n++
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "bench", []byte(strconv.Itoa(n)), []byte("value"), backend.Expiry{})
		if err != nil || !ok {
			b.Fatalf("prepare %d: %v %v", n, ok, err)
		}
	}
}

func BenchmarkPrepareParallel(b *testing.B) {
	s := openBench(b)
	ctx := b.Context()
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := n.Add(1)
			ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "bench", []byte(strconv.FormatInt(k, 10)), []byte("value"), backend.Expiry{})
			if err != nil || !ok {
				b.Errorf("prepare %d: %v %v", k, ok, err)
				return
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	s := openBench(b)
	ctx := b.Context()
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "bench", []byte("k"), []byte("value"), backend.Expiry{})
	if err != nil || !ok {
		b.Fatalf("prepare: %v %v", ok, err)
	}
	for b.Loop() {
		if _, ok, err := (backend.Calls{Runner: s}).Get(ctx, "bench", []byte("k")); err != nil || !ok {
			b.Fatalf("get: %v %v", ok, err)
		}
	}
}

func openBench(b *testing.B) *Store {
	b.Helper()
	return openTest(b, serverURL(b), Config{SweepInterval: -1})
}
