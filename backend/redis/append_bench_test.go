package redis

import (
	"context"
	"fmt"
	"testing"

	"github.com/prepkey/prepkey/backend"
)

// BenchmarkWireAppend measures the sidecar's side of a batch on the event
// loops' Wire: encoding 16 PK.PREPAREs as one EVALSHA (keys built from the
// ops' buffers). It needs no Redis.
func BenchmarkWireAppend(b *testing.B) {
	s, err := Open(context.Background(), "redis://127.0.0.1:1", Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w := s.Wire()
	ops := make([]backend.Op, 16)
	for i := range ops {
		ops[i] = backend.Op{Kind: backend.OpPrepare, NS: "username", Key: fmt.Appendf(nil, "user-%08d", i), Value: []byte(`{"id":42}`),
			Exp: backend.Expiry{Kind: backend.ExpireAfter, Millis: 60000}}
	}
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		dst = w.Append(dst[:0], ops)
	}
}
