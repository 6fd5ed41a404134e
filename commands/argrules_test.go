package commands

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// ruledStore is a fakeStore whose layout refuses keys starting with "x".
type ruledStore struct {
	fakeStore
	checked int
}

// Info declares the layout's check (backend.Info.ArgCheck).
func (r *ruledStore) Info() backend.Info { return backend.Info{ArgCheck: r.check} }

func (r *ruledStore) check(op *backend.Op) error {
	r.checked++
	for _, k := range [][]byte{op.Key, op.OldKey} {
		if len(k) > 0 && k[0] == 'x' {
			return errors.New("ERR key starts with x (layout=test)")
		}
	}
	return nil
}

// TestArgRules: a store's layout check refuses a command with its own
// words, after the command's own checks, in every path (alone, pipelined,
// queued in MULTI), and the store is never called for it.
func TestArgRules(t *testing.T) {
	st := &ruledStore{fakeStore: fakeStore{ok: true}}
	h := New(st, DefaultLimits, func() time.Time { return now })
	refused := e("ERR key starts with x (layout=test)")

	r, _ := h.Do(context.Background(), args("PK.PREPARE", "ns", "xk", "v"))
	require.Equal(t, refused, r)
	r, _ = h.Do(context.Background(), args("PK.REPREPARE", "ns", "k", "v", "FROM", "xold", "IFEQ", "v"))
	require.Equal(t, refused, r)
	require.Empty(t, st.calls)
	r, _ = h.Do(context.Background(), args("PK.PREPARE", "ns", "xk", "v", "EX"))
	require.Equal(t, e("ERR syntax error"), r, "the command's own checks come first")

	r, ok := h.Check(args("PK.ROLLBACK", "ns", "xk"))
	require.False(t, ok)
	require.Equal(t, refused, r)

	replies := make([]Reply, 2)
	calls := h.ParseBatch([][][]byte{args("PK.GET", "ns", "xk"), args("PK.GET", "ns", "k")}, replies)
	require.Equal(t, refused, replies[0])
	require.Len(t, calls.Ops, 1)
	require.Equal(t, "k", string(calls.Ops[0].Key))

	r, _ = h.Do(context.Background(), args("PK.PREPARE", "ns", "k", "v"))
	require.Equal(t, one, r)
	require.Len(t, st.calls, 1)
}

// TestNoArgRules: a store without a layout check (or whose check is nil)
// takes what the contract allows.
func TestNoArgRules(t *testing.T) {
	h := New(&fakeStore{ok: true}, DefaultLimits, func() time.Time { return now })
	require.Nil(t, h.argCheck)
	r, _ := h.Do(context.Background(), args("PK.PREPARE", "ns", "x\xff", "v"))
	require.Equal(t, one, r)
}
