package memory

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/prepkey/prepkey/backend"
)

// BenchmarkPrepareParallel reserves random keys from every P at once, as a
// sidecar under redis-benchmark -r does: each alone (RunOne), as
// commands.Handler runs a command alone.
func BenchmarkPrepareParallel(b *testing.B) {
	s := New(backend.Options{})
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	value := []byte(`{"userId":"42"}`)
	exp := backend.Expiry{Kind: backend.ExpireAfter, Millis: 60_000}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := make([]byte, 0, 32)
		for pb.Next() {
			key = strconv.AppendUint(append(key[:0], "k:"...), rand.Uint64N(1_000_000), 10)
			if r := s.RunOne(ctx, backend.Op{Kind: backend.OpPrepare, NS: "ns", Key: key, Value: value, Exp: exp}); r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	})
}
