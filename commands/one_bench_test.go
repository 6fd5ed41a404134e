package commands

import (
	"strconv"
	"testing"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
)

// BenchmarkOne is a PK.PREPARE (random keys of a million, no TTL) as the
// server answers one on memory: ParseOne into a reused op, one submission
// the store finishes at once, AnswerOne: the path of every command of a
// pipeline on memory:, the WebAssembly module's included (issue 34).
func BenchmarkOne(b *testing.B) {
	st := memory.New(backend.Options{})
	b.Cleanup(func() { _ = st.Close() })
	h := New(st, DefaultLimits, nil)
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
	n := 0
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
		n += int(r.Int)
	}
	_ = n
}
