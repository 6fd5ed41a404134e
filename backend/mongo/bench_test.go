package mongo

import (
	"strconv"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

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

// BenchmarkDelete compares, on the test's server, the deletes a ROLLBACK
// can be made of (see deleteByID in ops.go): the driver's deleteOne and
// deleteMany of a record by _id, and deleteOne of an absent one; the
// store's ROLLBACK that deletes (deleteOne alone) and that finds nothing
// (deleteOne, then deleteMany).
func BenchmarkDelete(b *testing.B) {
	s := openBench(b)
	ctx := b.Context()
	calls := backend.Calls{Runner: s}
	c := s.collection("bench")
	filter := func(n int) bson.D {
		return bson.D{{Key: "_id", Value: binary([]byte(strconv.Itoa(n)))}, retained(s.nowMs())}
	}
	// each prepares a record, then times del of it.
	each := func(b *testing.B, del func(n int) (bool, error)) {
		var n int
		for b.Loop() {
			n++
			b.StopTimer()
			if ok, err := calls.Prepare(ctx, "bench", []byte(strconv.Itoa(n)), []byte("value"), backend.Expiry{}); err != nil || !ok {
				b.Fatalf("prepare %d: %v %v", n, ok, err)
			}
			b.StartTimer()
			if ok, err := del(n); err != nil || !ok {
				b.Fatalf("delete %d: %v %v", n, ok, err)
			}
		}
	}
	b.Run("driver-deleteOne", func(b *testing.B) {
		each(b, func(n int) (bool, error) {
			res, err := c.DeleteOne(ctx, filter(n))
			return err == nil && res.DeletedCount == 1, err
		})
	})
	b.Run("driver-deleteMany", func(b *testing.B) {
		each(b, func(n int) (bool, error) {
			res, err := c.DeleteMany(ctx, filter(n))
			return err == nil && res.DeletedCount == 1, err
		})
	})
	b.Run("rollback-deletes", func(b *testing.B) {
		each(b, func(n int) (bool, error) {
			return calls.Rollback(ctx, "bench", []byte(strconv.Itoa(n)), backend.Cond{})
		})
	})
	b.Run("driver-deleteOne-absent", func(b *testing.B) {
		for b.Loop() {
			if res, err := c.DeleteOne(ctx, filter(-1)); err != nil || res.DeletedCount != 0 {
				b.Fatalf("deleteOne: %v %v", res, err)
			}
		}
	})
	b.Run("rollback-absent", func(b *testing.B) {
		for b.Loop() {
			if ok, err := calls.Rollback(ctx, "bench", []byte("absent"), backend.Cond{}); err != nil || ok {
				b.Fatalf("rollback: %v %v", ok, err)
			}
		}
	})
}
