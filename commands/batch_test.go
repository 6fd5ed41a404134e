package commands

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// batchStore is a fakeStore that also takes batches and records them.
type batchStore struct {
	fakeStore
	batches [][]backend.Op
	results []backend.Result
}

func (b *batchStore) Batch(_ context.Context, ops []backend.Op, res []backend.Result) {
	b.batches = append(b.batches, append([]backend.Op(nil), ops...))
	copy(res, b.results)
}

func TestBatch(t *testing.T) {
	st := &batchStore{results: []backend.Result{
		{OK: true},
		{Found: true, Record: backend.Record{Value: []byte("v"), Live: true}},
		{Err: errors.New("redis: i/o timeout")},
		{Move: backend.OldKeyMismatch},
		{Found: true, Record: backend.Record{Value: []byte("v"), TTLAt: 7}},
	}}
	h := New(st, DefaultLimits, func() time.Time { return now })
	cmds := [][][]byte{
		args("PK.PREPARE", "ns", "k", "v"),
		args("PK.GET", "ns", "k"),
		args("PK.PREPARE", "ns", "k", "v", "EX"), // refused: never reaches the store
		args("PK.ROLLBACK", "ns", "k"),
		args("PK.REPREPARE", "ns", "n", "v", "FROM", "k", "IFEQ", "v"),
		args("PK.GETVALUE", "bad ns", "k"), // refused
		args("PK.GETVALUE", "ns", "k"),
	}
	replies := make([]Reply, len(cmds))
	h.Batch(context.Background(), cmds, replies)
	require.Equal(t, []Reply{
		one,
		{Kind: Bulk, Bytes: []byte("v")},
		e("ERR syntax error"),
		e("UNAVAILABLE redis: i/o timeout"),
		e("MISMATCH old key has no record with that value"),
		e("ERR invalid namespace name"),
		{Kind: Record, Bytes: []byte("v"), Int: 7},
	}, replies)
	require.Len(t, st.batches, 1)
	kinds := []backend.OpKind{}
	for _, op := range st.batches[0] {
		kinds = append(kinds, op.Kind)
	}
	require.Equal(t, []backend.OpKind{backend.OpPrepare, backend.OpGet, backend.OpRollback, backend.OpMove, backend.OpGet}, kinds)

	// a store without Batch gets the same commands one at a time
	plain := &fakeStore{ok: true, found: true, rec: backend.Record{Value: []byte("v"), Live: true}}
	New(plain, DefaultLimits, func() time.Time { return now }).Batch(context.Background(), cmds[:3], replies[:3])
	require.Equal(t, []Reply{one, {Kind: Bulk, Bytes: []byte("v")}, e("ERR syntax error")}, replies[:3])
	require.Len(t, plain.calls, 2)
}

func args(a ...string) [][]byte {
	out := make([][]byte, len(a))
	for i, s := range a {
		out[i] = []byte(s)
	}
	return out
}
