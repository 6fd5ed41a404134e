package commands

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// batchStore is a fakeStore that records the lists of ops its Run gets and
// answers them with results.
type batchStore struct {
	fakeStore
	batches [][]backend.Op
	results []backend.Result
}

func (b *batchStore) Run(_ context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	if iso != backend.Pipelined {
		return errors.New("batchStore: not a pipeline")
	}
	b.batches = append(b.batches, append([]backend.Op(nil), ops...))
	copy(res, b.results)
	return nil
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

	// a store that runs them one at a time (backend.RunEach) answers the
	// same
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
