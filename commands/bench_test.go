package commands

import (
	"context"
	"strconv"
	"testing"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
)

// BenchmarkDo is one PK command through Handler.Do on the memory store,
// the path of every command on a DriveInline store (on the event loop):
// what the handler adds to the store's own work, parse and reply included.
func BenchmarkDo(b *testing.B) {
	st := memory.New(backend.Options{})
	b.Cleanup(func() { _ = st.Close() })
	h := New(st, DefaultLimits, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args func(i int) [][]byte
	}{
		{"prepare", func(i int) [][]byte {
			return [][]byte{[]byte("PK.PREPARE"), []byte("ns"), strconv.AppendInt([]byte("k:"), int64(i%100_000), 10), []byte("v"), []byte("PX"), []byte("60000")}
		}},
		{"get", func(i int) [][]byte {
			return [][]byte{[]byte("PK.GET"), []byte("ns"), strconv.AppendInt([]byte("k:"), int64(i%100_000), 10)}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			reqs := make([][][]byte, 1024)
			for i := range reqs {
				reqs[i] = tc.args(i * 97)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if r, ok := h.Do(ctx, reqs[i%len(reqs)]); !ok || r.Kind == Error {
					b.Fatal(r.Text)
				}
			}
		})
	}
}
