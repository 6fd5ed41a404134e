package memory

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestSubmitAtOnceAllocs: a one-op submission, reused as the server reuses
// one per connection, runs at once and allocates nothing.
func TestSubmitAtOnceAllocs(t *testing.T) {
	s := New(backend.Options{})
	t.Cleanup(func() { _ = s.Close() })
	var how backend.Completion
	sub := &backend.Submission{
		Ops:     []backend.Op{{Kind: backend.OpGet, NS: "ns", Key: []byte("k")}},
		Res:     make([]backend.Result, 1),
		Timeout: 5e9,
		Done:    func(_ *backend.Submission, h backend.Completion) { how = h },
	}
	allocs := testing.AllocsPerRun(100, func() { s.Submit(sub) })
	require.Zero(t, allocs)
	require.Equal(t, backend.AtOnce, how)
}

// TestSubmitLargeElsewhere: a submission of megabytes of arguments runs
// off the caller, under the deadline the store arms itself, and finishes
// Elsewhere; one just under the bound finishes at once.
func TestSubmitLargeElsewhere(t *testing.T) {
	s := New(backend.Options{})
	t.Cleanup(func() { _ = s.Close() })
	for _, tc := range []struct {
		size int
		want backend.Completion
	}{
		{offLoopAt - 10, backend.AtOnce},
		{offLoopAt, backend.Elsewhere},
	} {
		key := []byte{byte('a' + tc.want)}
		done := make(chan backend.Completion, 1)
		sub := &backend.Submission{
			Ops:     []backend.Op{{Kind: backend.OpPrepare, NS: "ns", Key: key, Value: bytes.Repeat([]byte("x"), tc.size-1)}},
			Res:     make([]backend.Result, 1),
			Timeout: 5e9,
			Done:    func(_ *backend.Submission, h backend.Completion) { done <- h },
		}
		s.Submit(sub)
		require.Equal(t, tc.want, <-done, "%d bytes", tc.size)
		require.NoError(t, sub.Res[0].Err)
		require.True(t, sub.Res[0].OK)
		r := s.RunOne(context.Background(), backend.Op{Kind: backend.OpGet, NS: "ns", Key: key})
		require.Len(t, r.Record.Value, tc.size-1)
	}
}

// BenchmarkSubmitOne is a PK.PREPARE through Submit, one reused
// submission, against BenchmarkRunOne, the same through RunOne.
func BenchmarkSubmitOne(b *testing.B) {
	s := New(backend.Options{})
	b.Cleanup(func() { _ = s.Close() })
	value := []byte(`{"userId":"42"}`)
	sub := &backend.Submission{
		Ops:     []backend.Op{{Kind: backend.OpPrepare, NS: "ns", Key: []byte("k:1"), Value: value}},
		Res:     make([]backend.Result, 1),
		Timeout: 5e9,
		Done:    func(*backend.Submission, backend.Completion) {},
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Submit(sub)
	}
}

func BenchmarkRunOne(b *testing.B) {
	s := New(backend.Options{})
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	value := []byte(`{"userId":"42"}`)
	op := backend.Op{Kind: backend.OpPrepare, NS: "ns", Key: []byte("k:1"), Value: value}
	b.ReportAllocs()
	for b.Loop() {
		if r := s.RunOne(ctx, op); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}
