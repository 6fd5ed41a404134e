package commands

import (
	"context"
	"strconv"
	"testing"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
)

// BenchmarkDo is one PK command through Handler.Do on the memory store:
// what the handler adds to the store's own work, parse and reply included,
// on the path of the tests and tools that run commands without a server
// (the server's is BenchmarkOne's). Do's op, passed to a parser through a
// function value, is on the heap: two allocations more than the server's
// path, which parses into the connection's op.
func BenchmarkDo(b *testing.B) {
	h := benchHandler(b)
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

// benchHandler is a Handler on a memory: store of its own.
func benchHandler(b *testing.B) *Handler {
	st := memory.New(backend.Options{})
	b.Cleanup(func() { _ = st.Close() })
	return New(st, DefaultLimits, nil)
}

// BenchmarkOne is a PK.PREPARE (random keys of a million, no TTL) as the
// server answers one on memory: ParseOne into a reused op, one submission
// the store finishes at once, AnswerOne: the path of every command of a
// pipeline on memory:, the WebAssembly module's included (issue 34).
func BenchmarkOne(b *testing.B) {
	h := benchHandler(b)
	reqs := make([][][]byte, 4096)
	for i := range reqs {
		reqs[i] = [][]byte{[]byte("PK.PREPARE"), []byte("ns"), strconv.AppendInt([]byte("k:"), int64(i*7919%1_000_000), 10), []byte("v")}
	}
	var ops [1]backend.Op
	var res [1]backend.Result
	var r Reply
	atOnce := false
	s := &backend.Submission{Ops: ops[:], Res: res[:], Done: func(_ *backend.Submission, how backend.Completion) { atOnce = how == backend.AtOnce }}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		spec, refused, ok := h.ParseOne(reqs[i%len(reqs)], &ops[0])
		if !ok || refused != nil {
			b.Fatal("refused")
		}
		h.Submit(s)
		if !atOnce {
			b.Fatal("not at once")
		}
		h.AnswerOne(spec, &ops[0], &res[0], &r)
		if r.Kind != Int {
			b.Fatalf("reply %+v", r)
		}
	}
}
